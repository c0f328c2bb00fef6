package server_test

import (
	"testing"
)

// TestAPIAnswersAreNotCachedOrSniffed: every API answer, success or error, carries
// Cache-Control: no-store and X-Content-Type-Options: nosniff.
func TestAPIAnswersAreNotCachedOrSniffed(t *testing.T) {
	p := newPortal(t, nil)
	tok := p.adminToken()
	for what, r := range map[string]struct {
		method, path, token string
	}{
		"me":           {"GET", "/api/v1/users/me", tok},
		"users":        {"GET", "/api/v1/users", tok},
		"unauthorized": {"GET", "/api/v1/users/me", ""},
		"openapi":      {"GET", "/api/v1/openapi.json", ""},
	} {
		got := p.Do(r.method, r.path, r.token, nil)
		if got.Status >= 500 {
			t.Fatalf("%s: %d %s", what, got.Status, got.Body)
		}
		if got.Header.Get("Cache-Control") != "no-store" || got.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s (%d): want Cache-Control no-store and nosniff, got %q, %q", what, got.Status,
				got.Header.Get("Cache-Control"), got.Header.Get("X-Content-Type-Options"))
		}
	}
}
