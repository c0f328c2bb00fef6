package sso

import (
	"slices"
	"testing"
)

func TestUsername(t *testing.T) {
	tests := map[string]struct{ claim, want string }{
		"plain":                 {"alice", "alice"},
		"upper case and dots":   {"Alice.Smith", "alice-smith"},
		"runs of others":        {"a__b  c", "a-b-c"},
		"leading and trailing":  {"--bob--", "bob"},
		"short is padded":       {"jo", "jo-sso"},
		"nothing usable":        {"_.-", ""},
		"non-ASCII is a dash":   {"zoë", "zo" + "-sso"},
		"long is cut, no dash":  {"a234567890123456789012345678901234567890123456789012345-7890", "a234567890123456789012345678901234567890123456789012345"},
		"digits only are valid": {"1234", "1234"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := Username(tc.claim); got != tc.want {
				t.Errorf("Username(%q) = %q, want %q", tc.claim, got, tc.want)
			}
		})
	}
}

func TestIdentityOf(t *testing.T) {
	tests := map[string]struct {
		claims       map[string]any
		wantUsername string
		wantGroups   []string
		wantErr      bool
	}{
		"username claim": {claims: map[string]any{"preferred_username": "Dev.One", "email": "x@example.com"}, wantUsername: "dev-one"},
		"email local part when no username claim": {claims: map[string]any{"email": "Ops.Two@example.com"}, wantUsername: "ops-two"},
		"subject when neither":                    {claims: map[string]any{}, wantUsername: "sub-123"},
		"groups sorted, unique, no empty":         {claims: map[string]any{"groups": []any{"b", "a", "b", ""}}, wantUsername: "sub-123", wantGroups: []string{"a", "b"}},
		"one group as a string":                   {claims: map[string]any{"groups": "ops"}, wantUsername: "sub-123", wantGroups: []string{"ops"}},
		"groups of another type":                  {claims: map[string]any{"groups": []any{1.0}}, wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			id, err := identityOf("https://idp", "sub-123", tc.claims, "preferred_username", "groups")
			if (err != nil) != tc.wantErr {
				t.Fatalf("error = %v, want error %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			if id.Username != tc.wantUsername || !slices.Equal(id.Groups, tc.wantGroups) {
				t.Errorf("got username %q groups %v, want %q %v", id.Username, id.Groups, tc.wantUsername, tc.wantGroups)
			}
		})
	}
}
