package server_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/mooringhq/mooring/internal/portal/models"
)

// TestMalformedUsernameIsAFieldError: a username no account can have ("a/b" is not
// even an object name) is refused as invalid input naming the field, not a 500.
func TestMalformedUsernameIsAFieldError(t *testing.T) {
	p := newPortal(t, nil)
	for _, name := range []string{"a/b", "../x", "a b c", "x"} {
		r := p.Do("POST", "/api/v1/login", "", map[string]string{"username": name, "password": "some password here"})
		if r.Status != http.StatusUnprocessableEntity {
			t.Fatalf("log in as %q: want 422, got %d: %s", name, r.Status, r.Body)
		}
		var e models.ErrorResponse
		if err := json.Unmarshal(r.Body, &e); err != nil || len(e.Error.Fields) == 0 || e.Error.Fields[0].Field != "username" {
			t.Fatalf("log in as %q: want an error naming the username field, got %s", name, r.Body)
		}
	}
}

// TestFirstAdminUsernameIsReservedOverHTTP: with a first admin configured, registering
// its username, in any case, is refused as invalid input naming the field, not as a
// conflict: the name is reserved whether or not the admin exists yet.
func TestFirstAdminUsernameIsReservedOverHTTP(t *testing.T) {
	p := newPortal(t, nil)
	r := p.Do("POST", "/api/v1/users", "", models.RegisterRequest{Username: "ADMIN", Email: "squat@example.com", Password: "a squatter's password"})
	if r.Status != http.StatusUnprocessableEntity {
		t.Fatalf("register the first admin's name: want 422, got %d: %s", r.Status, r.Body)
	}
	if e := r.Error(t); e.Message != `username "admin" is reserved` || len(e.Fields) == 0 || e.Fields[0].Field != "username" {
		t.Fatalf("want an error naming the reserved username, got %+v", e)
	}
}
