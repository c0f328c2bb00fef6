package services

import (
	"context"
	"errors"
	"testing"

	"github.com/mooringhq/mooring/internal/portal/models"
)

// TestFirstAdminUsernameIsReserved: nobody can register the first admin's username,
// in any case, before the portal creates the admin (and so own the name, or be taken
// for the admin). The portal's envtest suite creates its admin under a reserved name.
func TestFirstAdminUsernameIsReserved(t *testing.T) {
	m := newMemStore()
	s := NewUsers(UsersOptions{Store: m, ReservedUsername: "Admin"})
	ctx := context.Background()
	for _, name := range []string{"admin", "ADMIN", " Admin "} {
		_, err := s.Register(ctx, models.RegisterRequest{Username: name, Email: "squat@example.com", Password: "a squatter's password"})
		var se *Error
		if !errors.As(err, &se) || se.Kind != KindInvalid || se.Message != `username "admin" is reserved` ||
			len(se.Fields) != 1 || se.Fields[0].Field != "username" {
			t.Fatalf("register %q: want the username refused as reserved, got %v", name, err)
		}
	}
	if _, err := m.Get(ctx, "admin"); err == nil {
		t.Fatal("a refused registration stored the user")
	}
	if _, err := s.Register(ctx, models.RegisterRequest{Username: "admin2", Email: "a2@example.com", Password: "another good password"}); err != nil {
		t.Fatalf("a name that is not reserved: %v", err)
	}
}
