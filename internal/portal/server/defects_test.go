package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	portalv1alpha1 "github.com/mooringhq/mooring/api/portal/v1alpha1"
	"github.com/mooringhq/mooring/internal/devenv"
	"github.com/mooringhq/mooring/internal/portal/models"
	"github.com/mooringhq/mooring/internal/portal/portaltest"
	"github.com/mooringhq/mooring/internal/portal/server"
	"github.com/mooringhq/mooring/internal/testutil"
)

// TestProtectedNamespacesCannotBeGranted: the portal's own namespace (its signing keys),
// its users' namespace, the operator's and kube-* are never handed to a developer,
// even by an admin; the answer names the namespace.
func TestProtectedNamespacesCannotBeGranted(t *testing.T) {
	p := newPortal(t, nil)
	adm := p.adminToken()
	dev, _ := p.Register("protdev")
	own := env.Namespace(t)
	for _, ns := range []string{devenv.PortalNamespace, "mooring-portal-users", "mooring-system", "kube-system", "kube-public", "kube-node-lease"} {
		role := "developer"
		r := p.Do("PATCH", "/api/v1/users/"+dev.ID, adm, models.UpdateUserRequest{Role: &role, Namespaces: &[]string{own, ns}})
		portaltest.Expect(t, r, http.StatusUnprocessableEntity, "granting "+ns)
		e := r.Error(t)
		if !strings.Contains(e.Message, ns) || !strings.Contains(e.Message, "protected") || len(e.Fields) != 1 || e.Fields[0].Field != "namespaces[1]" {
			t.Fatalf("granting %s: want an error naming it as protected in namespaces[1], got %+v", ns, e)
		}
	}
	// A namespace of the configured list is protected as well.
	p2 := newPortal(t, func(c *serverConfig) { c.ProtectedNamespaces = []string{own} })
	role := "developer"
	r := p2.Do("PATCH", "/api/v1/users/"+dev.ID, p2.adminToken(), models.UpdateUserRequest{Role: &role, Namespaces: &[]string{own}})
	portaltest.Expect(t, r, http.StatusUnprocessableEntity, "granting a namespace of --protected-namespaces")
	if e := r.Error(t); !strings.Contains(e.Message, own) {
		t.Fatalf("want the error to name %s, got %+v", own, e)
	}
}

// loginFrom logs in as username from the client address ip (a trusted proxy reports
// it in X-Forwarded-For).
func loginFrom(t *testing.T, p *portal, ip, username, password string) int {
	t.Helper()
	body, _ := json.Marshal(models.LoginRequest{Username: username, Password: password})
	req, err := http.NewRequest("POST", p.URL+"/api/v1/login", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Forwarded-For", ip)
	resp, err := p.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode
}

// TestLockoutIsPerClient: wrong passwords from one client lock the account for that
// client only, so nobody can keep an account locked for its owner without its password;
// an admin unlocks it.
func TestLockoutIsPerClient(t *testing.T) {
	p := newPortal(t, func(c *serverConfig) {
		c.TrustedProxies = []string{"127.0.0.1", "::1"}
		c.Lockout.Base, c.Lockout.Max = time.Hour, time.Hour
	})
	u, pw := p.Register("victim")
	const attacker, owner = "203.0.113.7", "198.51.100.9"
	for range 3 {
		if s := loginFrom(t, p, attacker, u.Username, "a wrong password!"); s != http.StatusUnauthorized {
			t.Fatalf("wrong password: want 401, got %d", s)
		}
	}
	testutil.Eventually(t, 10*time.Second, "3 failed logins counted", func() error {
		var obj portalv1alpha1.User
		if err := admin.Get(context.Background(), client.ObjectKey{Name: u.Username}, &obj); err != nil {
			return err
		}
		if obj.Status.FailedLogins < 3 {
			return errorf("failedLogins %d", obj.Status.FailedLogins)
		}
		return nil
	})
	if s := loginFrom(t, p, attacker, u.Username, pw); s != http.StatusUnauthorized {
		t.Fatalf("the right password from the locked-out client: want 401, got %d", s)
	}
	if s := loginFrom(t, p, owner, u.Username, pw); s != http.StatusOK {
		t.Fatalf("the owner's login from another client: want 200, got %d", s)
	}
	// The owner's success does not lift the attacker's lock; an admin's unlock does.
	if s := loginFrom(t, p, attacker, u.Username, pw); s != http.StatusUnauthorized {
		t.Fatalf("the right password from the locked-out client after the owner logged in: want 401, got %d", s)
	}
	adm := p.adminToken()
	r := p.Do("POST", "/api/v1/users/"+u.ID+"/unlock", u.ID, nil)
	portaltest.Expect(t, r, http.StatusUnauthorized, "unlock without a valid token")
	owned := p.Login(u.Username, pw).AccessToken
	r = p.Do("POST", "/api/v1/users/"+u.ID+"/unlock", owned, nil)
	portaltest.Expect(t, r, http.StatusForbidden, "a user without update on users unlocking")
	r = p.Do("POST", "/api/v1/users/"+u.ID+"/unlock", adm, nil)
	portaltest.Expect(t, r, http.StatusOK, "admin unlocks")
	if s := loginFrom(t, p, attacker, u.Username, pw); s != http.StatusOK {
		t.Fatalf("the right password after the unlock: want 200, got %d", s)
	}
}

// TestLastAdminKeepsTheRole: the last admin can neither be demoted nor deleted, and a
// portal that starts with no admin makes its first admin an admin again.
func TestLastAdminKeepsTheRole(t *testing.T) {
	p := newPortal(t, nil)
	adm := p.adminToken()
	ctx := context.Background()
	// Other tests leave admins behind: take the role from all but the first admin.
	var l portalv1alpha1.UserList
	if err := admin.List(ctx, &l); err != nil {
		t.Fatal(err)
	}
	var first *portalv1alpha1.User
	for i := range l.Items {
		u := &l.Items[i]
		if u.Spec.Username == "admin" {
			first = u
			continue
		}
		if u.Spec.Role == portalv1alpha1.RoleAdmin {
			none := "none"
			portaltest.Expect(t, p.Do("PATCH", "/api/v1/users/"+u.Spec.ID, adm, models.UpdateUserRequest{Role: &none}), http.StatusOK, "demote "+u.Name)
		}
	}
	if first == nil {
		t.Fatal("no first admin")
	}
	restore := func() {
		var u portalv1alpha1.User
		if err := admin.Get(ctx, client.ObjectKey{Name: "admin"}, &u); err == nil && u.Spec.Role != portalv1alpha1.RoleAdmin {
			u.Spec.Role = portalv1alpha1.RoleAdmin
			_ = admin.Update(ctx, &u)
		}
	}
	t.Cleanup(restore)
	for _, role := range []string{"none", "developer", "auditor"} {
		r := p.Do("PATCH", "/api/v1/users/"+first.Spec.ID, adm, models.UpdateUserRequest{Role: &role})
		if r.Status != http.StatusConflict {
			restore()
		}
		portaltest.Expect(t, r, http.StatusConflict, "demote the last admin to "+role)
		if e := r.Error(t); !strings.Contains(e.Message, "last admin") {
			t.Fatalf("want a message about the last admin, got %+v", e)
		}
	}
	r := p.Do("DELETE", "/api/v1/users/"+first.Spec.ID, adm, nil)
	portaltest.Expect(t, r, http.StatusConflict, "delete the last admin")

	// With a second admin, the first may step down.
	other, _ := p.Register("second-admin")
	p.Grant(adm, other.ID, "admin")
	none := "none"
	portaltest.Expect(t, p.Do("PATCH", "/api/v1/users/"+other.ID, adm, models.UpdateUserRequest{Role: &none}), http.StatusOK, "demote an admin that is not the last")

	// A cluster where the first admin lost the role anyway (by hand, or an older portal):
	// the next start gives it back.
	var u portalv1alpha1.User
	if err := admin.Get(ctx, client.ObjectKey{Name: "admin"}, &u); err != nil {
		t.Fatal(err)
	}
	u.Spec.Role = portalv1alpha1.RoleNone
	if err := admin.Update(ctx, &u); err != nil {
		t.Fatal(err)
	}
	_ = newPortal(t, nil)
	if err := admin.Get(ctx, client.ObjectKey{Name: "admin"}, &u); err != nil {
		t.Fatal(err)
	}
	if u.Spec.Role != portalv1alpha1.RoleAdmin {
		t.Fatalf("a portal started with no admin left the first admin %q", u.Spec.Role)
	}
}

// rawGet sends a GET without the validating client: these paths are outside the
// document's parameters on purpose.
func rawGet(t *testing.T, p *portal, path, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", p.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestPathParametersAreValidated: a namespace or name that is no DNS name is a bad
// request, never an internal error, and an empty namespace never lists every namespace.
func TestPathParametersAreValidated(t *testing.T) {
	p := newPortal(t, nil)
	adm := p.adminToken()
	ns := env.Namespace(t)
	portaltest.Expect(t, p.Do("POST", "/api/v1/namespaces/"+ns+"/apps", adm, portaltest.App("web")), http.StatusCreated, "create an App")
	errorsBefore := strings.Count(logs.String(), `"level":"ERROR"`)
	for path, want := range map[string][]int{
		"/api/v1/namespaces/%2e%2e/apps":               {http.StatusBadRequest},
		"/api/v1/namespaces/Team_A/apps":               {http.StatusBadRequest},
		"/api/v1/namespaces//apps":                     {http.StatusBadRequest, http.StatusNotFound},
		"/api/v1/namespaces/" + ns + "/apps/%2e%2e":    {http.StatusBadRequest},
		"/api/v1/namespaces/" + ns + "/apps/a%2fb":     {http.StatusBadRequest, http.StatusNotFound},
		"/api/v1/namespaces/%2e%2e/events":             {http.StatusBadRequest},
		"/api/v1/namespaces/" + ns + "/backups/..%2e/": {http.StatusBadRequest, http.StatusNotFound},
	} {
		status, body := rawGet(t, p, path, adm)
		ok := false
		for _, w := range want {
			ok = ok || status == w
		}
		if !ok {
			t.Errorf("GET %s: want %v, got %d: %s", path, want, status, body)
		}
		if strings.Contains(body, `"items"`) {
			t.Errorf("GET %s listed objects: %s", path, body)
		}
	}
	if n := strings.Count(logs.String(), `"level":"ERROR"`); n != errorsBefore {
		t.Errorf("bad path parameters logged %d ERROR lines", n-errorsBefore)
	}
}

// TestFieldErrorsNameTheField: the API server's field errors reach the client under
// the request's field, never as "<nil>".
func TestFieldErrorsNameTheField(t *testing.T) {
	p := newPortal(t, nil)
	adm := p.adminToken()
	ns := env.Namespace(t)
	for _, name := range []string{"Bad_Name", strings.Repeat("a", 300), "-leading-dash"} {
		r := p.Do("POST", "/api/v1/namespaces/"+ns+"/apps", adm, portaltest.App(name))
		if r.Status < 400 || r.Status > 499 {
			t.Fatalf("create App %q: want a 4xx, got %d: %s", name, r.Status, r.Body)
		}
		e := r.Error(t)
		named := false
		for _, f := range e.Fields {
			if f.Field == "" || strings.Contains(f.Field, "<nil>") || strings.Contains(f.Message, "<nil>") {
				t.Errorf("create App %q: a field error without a field: %+v", name, e)
			}
			named = named || f.Field == "metadata.name"
		}
		if !named || strings.Contains(e.Message, "<nil>") {
			t.Errorf("create App %q: want an error on metadata.name, got %+v", name, e)
		}
	}
}

// send posts body with contentType, outside the validating client, as nobody.
func send(t *testing.T, p *portal, method, path, contentType, body string) (int, models.ErrorBody) {
	t.Helper()
	return sendRaw(t, p, "", method, path, contentType, body)
}

// TestJSONOnlyExactKeysAndMetrics: bodies are JSON with the document's exact keys; the
// document lists 413, 415 and 500; /metrics is not on the public listener.
func TestJSONOnlyExactKeysAndMetrics(t *testing.T) {
	p := newPortal(t, nil)
	u, pw := p.Register("strict")
	if s, _ := send(t, p, "POST", "/api/v1/login", "application/x-www-form-urlencoded", "username="+u.Username+"&password="+pw); s != http.StatusUnsupportedMediaType {
		t.Errorf("a form-encoded login: want 415, got %d", s)
	}
	if s, _ := send(t, p, "POST", "/api/v1/login", "text/plain", fmt.Sprintf(`{"username":%q,"password":%q}`, u.Username, pw)); s != http.StatusUnsupportedMediaType {
		t.Errorf("a text/plain login: want 415, got %d", s)
	}
	if s, _ := send(t, p, "POST", "/api/v1/login", "application/json; charset=utf-8", fmt.Sprintf(`{"username":%q,"password":%q}`, u.Username, pw)); s != http.StatusOK {
		t.Errorf("a JSON login with a charset: want 200, got %d", s)
	}
	s, e := send(t, p, "POST", "/api/v1/login", "application/json", fmt.Sprintf(`{"Username":%q,"password":%q}`, u.Username, pw))
	if s != http.StatusBadRequest || len(e.Fields) != 1 || e.Fields[0].Field != "Username" {
		t.Errorf("a case-variant key: want 400 naming Username, got %d %+v", s, e)
	}
	if s, _ := rawGet(t, p, "/metrics", ""); s != http.StatusNotFound {
		t.Errorf("/metrics on the public listener: want 404, got %d", s)
	}
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	r := p.Do("GET", "/api/v1/openapi.json", "", nil)
	r.Decode(t, &doc)
	for path, ops := range doc.Paths {
		for method, raw := range ops {
			if method == "parameters" {
				continue
			}
			var op struct {
				RequestBody json.RawMessage            `json:"requestBody"`
				Responses   map[string]json.RawMessage `json:"responses"`
			}
			if err := json.Unmarshal(raw, &op); err != nil {
				t.Fatal(err)
			}
			want := []string{"500"}
			if op.RequestBody != nil {
				want = append(want, "413", "415")
			}
			for _, code := range want {
				if _, ok := op.Responses[code]; !ok {
					t.Errorf("%s %s does not document %s", method, path, code)
				}
			}
		}
	}
}

// TestListsPaginateWithoutManagedFields: lists pass limit and continue to the API
// server and return its continue token; no object carries managedFields.
func TestListsPaginateWithoutManagedFields(t *testing.T) {
	p := newPortal(t, nil)
	adm := p.adminToken()
	ns := env.Namespace(t)
	for _, name := range []string{"a", "b", "c"} {
		r := p.Do("POST", "/api/v1/namespaces/"+ns+"/apps", adm, portaltest.App(name))
		portaltest.Expect(t, r, http.StatusCreated, "create "+name)
		if strings.Contains(string(r.Body), "managedFields") {
			t.Errorf("create answered with managedFields")
		}
	}
	type list struct {
		Metadata struct {
			Continue string `json:"continue"`
		} `json:"metadata"`
		Items []map[string]any `json:"items"`
	}
	r := p.Do("GET", "/api/v1/namespaces/"+ns+"/apps?limit=2", adm, nil)
	portaltest.Expect(t, r, http.StatusOK, "first page")
	var page list
	r.Decode(t, &page)
	if len(page.Items) != 2 || page.Metadata.Continue == "" {
		t.Fatalf("limit=2: want 2 items and a continue token, got %d items, continue %q", len(page.Items), page.Metadata.Continue)
	}
	if strings.Contains(string(r.Body), "managedFields") {
		t.Errorf("a list carried managedFields")
	}
	r = p.Do("GET", "/api/v1/namespaces/"+ns+"/apps?limit=2&continue="+page.Metadata.Continue, adm, nil)
	portaltest.Expect(t, r, http.StatusOK, "second page")
	var second list
	r.Decode(t, &second)
	if len(second.Items) != 1 || second.Metadata.Continue != "" {
		t.Fatalf("second page: want 1 item and no continue token, got %d items, continue %q", len(second.Items), second.Metadata.Continue)
	}
	r = p.Do("GET", "/api/v1/namespaces/"+ns+"/apps/a", adm, nil)
	portaltest.Expect(t, r, http.StatusOK, "get")
	if strings.Contains(string(r.Body), "managedFields") {
		t.Errorf("get answered with managedFields")
	}
	// Events page the same way.
	for i := range 3 {
		create(t, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("e%d", i), Namespace: ns},
			InvolvedObject: corev1.ObjectReference{Kind: "App", Name: "a", Namespace: ns}, Reason: "Test", Message: "m", Type: "Normal"})
	}
	r = p.Do("GET", "/api/v1/namespaces/"+ns+"/events?limit=2", adm, nil)
	portaltest.Expect(t, r, http.StatusOK, "first page of events")
	var events list
	r.Decode(t, &events)
	if len(events.Items) != 2 || events.Metadata.Continue == "" || strings.Contains(string(r.Body), "managedFields") {
		t.Fatalf("events, limit=2: want 2 items, a continue token and no managedFields, got %d items, continue %q", len(events.Items), events.Metadata.Continue)
	}
	for _, q := range []string{"limit=0", "limit=-1", "limit=x", "limit=100000"} {
		status, body := rawGet(t, p, "/api/v1/namespaces/"+ns+"/apps?"+q, adm)
		if status != http.StatusBadRequest {
			t.Errorf("%s: want 400, got %d: %s", q, status, body)
		}
	}
}

type serverConfig = server.Config
