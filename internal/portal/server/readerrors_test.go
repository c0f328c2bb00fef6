package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/mooringhq/mooring/internal/portal/models"
	"github.com/mooringhq/mooring/internal/portal/portaltest"
)

// noEmptyFields fails when an error carries a field error without a field.
func noEmptyFields(t *testing.T, e models.ErrorBody, what string) {
	t.Helper()
	for _, f := range e.Fields {
		if f.Field == "" {
			t.Errorf("%s: a field error without a field: %+v", what, e)
		}
	}
}

// TestReadErrorsKeepTheAPIServersWords: a read the API server refuses answers with its
// status and its message, as a write does: 403 naming the verb and the resource, 404
// naming the resource and the name, and no field error without a field.
func TestReadErrorsKeepTheAPIServersWords(t *testing.T) {
	p := newPortal(t, nil)
	adm := p.adminToken()
	mine, other := env.Namespace(t), env.Namespace(t)
	u, pw := p.Register("readerr")
	p.Grant(adm, u.ID, "developer", mine)
	dev := p.Login(u.Username, pw).AccessToken

	for _, tc := range []struct {
		what, path string
		status     int
		words      []string
	}{
		{"get in a namespace not granted", "/api/v1/namespaces/" + other + "/apps/web", http.StatusForbidden,
			[]string{`apps.mooring.dev "web" is forbidden`, `cannot get resource "apps"`, other}},
		{"list in a namespace not granted", "/api/v1/namespaces/" + other + "/apps", http.StatusForbidden,
			[]string{"apps.mooring.dev is forbidden", `cannot list resource "apps"`, other}},
		{"a missing object", "/api/v1/namespaces/" + mine + "/apps/nope", http.StatusNotFound,
			[]string{`apps.mooring.dev "nope" not found`}},
	} {
		r := p.Do("GET", tc.path, dev, nil)
		portaltest.Expect(t, r, tc.status, tc.what)
		e := r.Error(t)
		for _, w := range tc.words {
			if !strings.Contains(e.Message, w) {
				t.Errorf("%s: want the message to say %q, got %q", tc.what, w, e.Message)
			}
		}
		noEmptyFields(t, e, tc.what)
	}
}

// TestInvalidContinueTokenIsSaidOneWay: every list (objects, events, users) answers a
// continue token that is no token the same way: 400 naming the continue parameter.
func TestInvalidContinueTokenIsSaidOneWay(t *testing.T) {
	p := newPortal(t, nil)
	adm := p.adminToken()
	ns := env.Namespace(t)
	var first models.ErrorBody
	for i, path := range []string{
		"/api/v1/namespaces/" + ns + "/apps?limit=1&continue=not-a-token",
		"/api/v1/namespaces/" + ns + "/backups?continue=not-a-token",
		"/api/v1/namespaces/" + ns + "/events?limit=1&continue=not-a-token",
		"/api/v1/users?limit=1&continue=not-a-token",
	} {
		r := p.Do("GET", path, adm, nil)
		portaltest.Expect(t, r, http.StatusBadRequest, path)
		e := r.Error(t)
		if len(e.Fields) != 1 || e.Fields[0].Field != "continue" || !strings.Contains(e.Message, "continue") {
			t.Errorf("%s: want an error naming the continue parameter, got %+v", path, e)
		}
		if i == 0 {
			first = e
		} else if e.Code != first.Code || e.Message != first.Message {
			t.Errorf("%s: want the words of every other list, %q (%s), got %q (%s)", path, first.Message, first.Code, e.Message, e.Code)
		}
	}
}
