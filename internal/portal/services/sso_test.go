package services

import (
	"context"
	"errors"
	"slices"
	"testing"

	portalv1alpha1 "github.com/mooringhq/mooring/api/portal/v1alpha1"
	"github.com/mooringhq/mooring/internal/portal/models"
	"github.com/mooringhq/mooring/internal/portal/sso"
)

// A first sign-in makes an account named after the claim, the next free numbered
// variant when the name is taken or reserved; a later one finds it by issuer and
// subject, whatever its username claim says now.
func TestSSOAccount(t *testing.T) {
	ctx := context.Background()
	m := newMemStore()
	s := NewUsers(UsersOptions{Store: m, ReservedUsername: "admin"})
	if err := m.Create(ctx, &portalv1alpha1.User{Spec: portalv1alpha1.UserSpec{ID: "local", Username: "carol"}}, "hash"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		id       sso.Identity
		wantName string
	}{
		{sso.Identity{Issuer: "https://idp", Subject: "1", Username: "carol"}, "carol-2"},
		{sso.Identity{Issuer: "https://idp", Subject: "2", Username: "carol"}, "carol-3"},
		{sso.Identity{Issuer: "https://idp", Subject: "3", Username: "admin"}, "admin-2"},
		{sso.Identity{Issuer: "https://idp", Subject: "1", Username: "renamed"}, "carol-2"},
		{sso.Identity{Issuer: "https://other", Subject: "1", Username: "dave"}, "dave"},
	}
	for _, tc := range tests {
		u, err := s.ssoAccount(ctx, tc.id)
		if err != nil {
			t.Fatalf("%+v: %v", tc.id, err)
		}
		if u.Name != tc.wantName || u.Spec.SSO == nil || *u.Spec.SSO != (portalv1alpha1.SSOIdentity{Issuer: tc.id.Issuer, Subject: tc.id.Subject}) {
			t.Errorf("%+v: got %s with sso %+v, want %s", tc.id, u.Name, u.Spec.SSO, tc.wantName)
		}
		if u.Spec.Role != portalv1alpha1.RoleNone {
			t.Errorf("%s: role %q, want none", u.Name, u.Spec.Role)
		}
	}
	if n := len(m.users); n != 5 {
		t.Errorf("%d accounts, want 5 (carol and four single sign-on accounts)", n)
	}
}

// The groups claim is written when it changed, and not at all when it did not, also
// when another replica wrote the User meanwhile.
func TestSetGroups(t *testing.T) {
	ctx := context.Background()
	m := newMemStore()
	s := NewUsers(UsersOptions{Store: m})
	u, err := s.ssoAccount(ctx, sso.Identity{Issuer: "https://idp", Subject: "1", Username: "erin"})
	if err != nil {
		t.Fatal(err)
	}
	rv := u.ResourceVersion
	if u, err = s.setGroups(ctx, u, nil); err != nil || u.ResourceVersion != rv {
		t.Fatalf("no groups before or after: wrote (resourceVersion %s -> %s), err %v", rv, u.ResourceVersion, err)
	}
	m.conflicts = 2
	if u, err = s.setGroups(ctx, u, []string{"a", "b"}); err != nil {
		t.Fatal(err)
	}
	stored, _ := m.Get(ctx, "erin")
	if !slices.Equal(stored.Status.Groups, []string{"a", "b"}) {
		t.Fatalf("stored groups %v, want [a b]", stored.Status.Groups)
	}
	rv = stored.ResourceVersion
	if u, err = s.setGroups(ctx, u, []string{"a", "b"}); err != nil || u.ResourceVersion != rv {
		t.Fatalf("same groups again: wrote (resourceVersion %s -> %s), err %v", rv, u.ResourceVersion, err)
	}
}

// Password logins and registration are refused while local logins are off, naming
// single sign-on, before any work.
func TestNoLocalLogin(t *testing.T) {
	s := NewUsers(UsersOptions{Store: newMemStore(), DisableLocalLogin: true})
	if _, err := s.Login(context.Background(), models.LoginRequest{Username: "anyone", Password: "some-password-1"}); !errors.Is(err, errNoLocalLogin) {
		t.Errorf("Login: %v, want %v", err, errNoLocalLogin)
	}
	if _, err := s.Register(context.Background(), models.RegisterRequest{Username: "anyone", Email: "a@example.com", Password: "some-password-1"}); !errors.Is(err, errNoLocalLogin) {
		t.Errorf("Register: %v, want %v", err, errNoLocalLogin)
	}
}
