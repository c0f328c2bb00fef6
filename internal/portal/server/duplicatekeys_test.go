package server_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/mooringhq/mooring/internal/portal/models"
	"github.com/mooringhq/mooring/internal/portal/portaltest"
)

// sendAs sends a JSON body as it is, with token, outside the validating client (which
// could not send a key twice).
func sendAs(t *testing.T, p *portal, token, method, path, body string) (int, models.ErrorBody) {
	t.Helper()
	return sendRaw(t, p, token, method, path, "application/json", body)
}

// sendRaw sends body as it is with contentType (none when empty) and token as the
// bearer (none when empty), and reads the error the portal answered, if any.
func sendRaw(t *testing.T, p *portal, token, method, path, contentType, body string) (int, models.ErrorBody) {
	t.Helper()
	req, err := http.NewRequest(method, p.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var e models.ErrorResponse
	b, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(b, &e)
	return resp.StatusCode, e.Error
}

// TestDuplicateKeysAreRefused: a body with a key twice is refused with 400 naming the
// key, for an account as for an object, and nothing is made: encoding/json would keep
// the last one, and the API server never sees the body the portal sent on.
func TestDuplicateKeysAreRefused(t *testing.T) {
	p := newPortal(t, nil)
	adm := p.adminToken()
	ns := env.Namespace(t)
	first, second := portaltest.UniqueName("dupfirst"), portaltest.UniqueName("dupsecond")
	for _, tc := range []struct{ what, path, body, field string }{
		{"an account", "/api/v1/users", fmt.Sprintf(`{"username":%q,"email":"dup@example.com","password":"a long enough password","username":%q}`, first, second), "username"},
		{"an App", "/api/v1/namespaces/" + ns + "/apps", `{"metadata":{"name":"dup"},"spec":{"image":"nginx:1.27","replicas":1,"replicas":3}}`, "spec.replicas"},
		{"a number out of range", "/api/v1/namespaces/" + ns + "/apps", `{"metadata":{"name":"big"},"spec":{"image":"nginx:1.27","replicas":1e400}}`, "spec.replicas"},
	} {
		status, e := sendAs(t, p, adm, "POST", tc.path, tc.body)
		if status != http.StatusBadRequest || len(e.Fields) != 1 || e.Fields[0].Field != tc.field {
			t.Errorf("%s: want 400 naming %s, got %d %+v", tc.what, tc.field, status, e)
		}
	}
	for _, name := range []string{first, second} {
		if r := p.Do("POST", "/api/v1/login", "", map[string]string{"username": name, "password": "a long enough password"}); r.Status != http.StatusUnauthorized {
			t.Errorf("the refused registration made %s (login answered %d)", name, r.Status)
		}
	}
	for _, name := range []string{"dup", "big"} {
		portaltest.Expect(t, p.Do("GET", "/api/v1/namespaces/"+ns+"/apps/"+name, adm, nil), http.StatusNotFound, "the refused App "+name)
	}
}
