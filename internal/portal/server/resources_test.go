package server_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	portalv1alpha1 "github.com/mooringhq/mooring/api/portal/v1alpha1"
	"github.com/mooringhq/mooring/internal/portal/models"
	"github.com/mooringhq/mooring/internal/portal/portaltest"
	"github.com/mooringhq/mooring/internal/testutil"
)

func bindingsOf(t *testing.T, id string) (crbs []string, rbs []string) {
	t.Helper()
	ctx := context.Background()
	var cl rbacv1.ClusterRoleBindingList
	if err := admin.List(ctx, &cl, client.MatchingLabels{portalv1alpha1.IDLabel: id}); err != nil {
		t.Fatal(err)
	}
	for _, b := range cl.Items {
		crbs = append(crbs, b.RoleRef.Name)
	}
	var rl rbacv1.RoleBindingList
	if err := admin.List(ctx, &rl, client.MatchingLabels{portalv1alpha1.IDLabel: id}); err != nil {
		t.Fatal(err)
	}
	for _, b := range rl.Items {
		rbs = append(rbs, b.Namespace+"/"+b.RoleRef.Name)
	}
	return crbs, rbs
}

func TestRolesDecideWhatUsersDo(t *testing.T) {
	p := newPortal(t, nil)
	adm := p.adminToken()
	nsA, nsB := env.Namespace(t), env.Namespace(t)

	// No role: nothing.
	dev, devPw := p.Register("dev")
	devTok := p.Login(dev.Username, devPw).AccessToken
	r := p.Do("POST", "/api/v1/namespaces/"+nsA+"/apps", devTok, portaltest.App("web"))
	portaltest.Expect(t, r, http.StatusForbidden, "a user without a role creating an App")
	if e := r.Error(t); e.Code != "Forbidden" || !strings.Contains(e.Message, "system:serviceaccount:mooring-portal-users:u-"+dev.ID) {
		t.Fatalf("want the API server's Forbidden naming the impersonated user, got %+v", e)
	}
	portaltest.Expect(t, p.Do("GET", "/api/v1/users", devTok, nil), http.StatusForbidden, "a user without a role listing users")
	var nl models.NamespaceList
	r = p.Do("GET", "/api/v1/namespaces", devTok, nil)
	portaltest.Expect(t, r, http.StatusOK, "namespaces of a user without a role")
	if r.Decode(t, &nl); len(nl.Items) != 0 {
		t.Fatalf("a user without a role may use no namespace, got %v", nl.Items)
	}

	// Developer in A: works in A, 403 in B; bindings follow.
	p.Grant(adm, dev.ID, "developer", nsA)
	if crbs, rbs := bindingsOf(t, dev.ID); len(crbs) != 0 || len(rbs) != 1 || rbs[0] != nsA+"/mooring-developer" {
		t.Fatalf("developer in %s: want one RoleBinding to mooring-developer there, got %v %v", nsA, crbs, rbs)
	}
	devTok = p.Login(dev.Username, devPw).AccessToken // the role is read per request; a new login is not needed, but harmless
	r = p.Do("POST", "/api/v1/namespaces/"+nsA+"/apps", devTok, portaltest.App("web"))
	portaltest.Expect(t, r, http.StatusCreated, "a developer creating an App in their namespace")
	portaltest.Expect(t, p.Do("POST", "/api/v1/namespaces/"+nsB+"/apps", devTok, portaltest.App("web")), http.StatusForbidden, "a developer creating an App elsewhere")
	portaltest.Expect(t, p.Do("GET", "/api/v1/namespaces/"+nsA+"/apps/web", devTok, nil), http.StatusOK, "get the App")
	portaltest.Expect(t, p.Do("GET", "/api/v1/namespaces/"+nsA+"/apps/nothing", devTok, nil), http.StatusNotFound, "get a missing App")
	portaltest.Expect(t, p.Do("POST", "/api/v1/namespaces/"+nsA+"/apps", devTok, portaltest.App("web")), http.StatusConflict, "create the App twice")
	r = p.Do("PATCH", "/api/v1/namespaces/"+nsA+"/apps/web", devTok, map[string]any{"spec": map[string]any{"replicas": 3}})
	portaltest.Expect(t, r, http.StatusOK, "patch the App")
	portaltest.Expect(t, p.Do("GET", "/api/v1/namespaces/"+nsA+"/apps", devTok, nil), http.StatusOK, "list Apps")
	// backups/{name} and backups/{name}/run share a prefix in the router: both must route.
	r = p.Do("GET", "/api/v1/namespaces/"+nsA+"/backups/nightly", devTok, nil)
	portaltest.Expect(t, r, http.StatusNotFound, "get a missing Backup")
	if e := r.Error(t); e.Code != "NotFound" || !strings.Contains(e.Message, "backups.mooring.dev") {
		t.Fatalf("want the API server's NotFound for the Backup, got %+v", e)
	}
	portaltest.Expect(t, p.Do("POST", "/api/v1/namespaces/"+nsA+"/backups/nightly/run", devTok, nil), http.StatusNotFound, "run a missing Backup")
	portaltest.Expect(t, p.Do("GET", "/api/v1/namespaces/"+nsA+"/widgets", devTok, nil), http.StatusNotFound, "an unknown kind")
	portaltest.Expect(t, p.Do("GET", "/api/v1/namespaces/"+nsA+"/events", devTok, nil), http.StatusOK, "list events")
	// Invalid objects: the API server's 422 with every field error passes through.
	bad := map[string]any{"metadata": map[string]any{"name": "bad"}, "spec": map[string]any{"image": "", "replicas": -1, "port": 0}}
	r = p.Do("POST", "/api/v1/namespaces/"+nsA+"/apps", devTok, bad)
	portaltest.Expect(t, r, http.StatusUnprocessableEntity, "an invalid App")
	if e := r.Error(t); e.Code != "Invalid" || len(e.Fields) < 2 {
		t.Fatalf("want Invalid with a field error per bad field, got %+v", e)
	}
	// Unknown fields: refused by strict field validation.
	unknown := portaltest.App("typo")
	unknown["spec"].(map[string]any)["replicaz"] = 2
	portaltest.Expect(t, p.Do("POST", "/api/v1/namespaces/"+nsA+"/apps", devTok, unknown), http.StatusBadRequest, "an App with an unknown field")
	r = p.Do("GET", "/api/v1/namespaces", devTok, nil)
	portaltest.Expect(t, r, http.StatusOK, "namespaces of a developer")
	if r.Decode(t, &nl); len(nl.Items) != 1 || nl.Items[0] != nsA {
		t.Fatalf("a developer in %s may use only it, got %v", nsA, nl.Items)
	}

	// Auditor: reads everywhere, writes nothing; the developer binding goes.
	aud, audPw := p.Register("aud")
	p.Grant(adm, aud.ID, "auditor")
	audTok := p.Login(aud.Username, audPw).AccessToken
	for _, ns := range []string{nsA, nsB} {
		portaltest.Expect(t, p.Do("GET", "/api/v1/namespaces/"+ns+"/apps", audTok, nil), http.StatusOK, "an auditor listing Apps in "+ns)
		portaltest.Expect(t, p.Do("GET", "/api/v1/namespaces/"+ns+"/events", audTok, nil), http.StatusOK, "an auditor listing events in "+ns)
	}
	portaltest.Expect(t, p.Do("POST", "/api/v1/namespaces/"+nsB+"/apps", audTok, portaltest.App("nope")), http.StatusForbidden, "an auditor creating an App")
	portaltest.Expect(t, p.Do("DELETE", "/api/v1/namespaces/"+nsA+"/apps/web", audTok, nil), http.StatusForbidden, "an auditor deleting an App")
	portaltest.Expect(t, p.Do("GET", "/api/v1/users", audTok, nil), http.StatusOK, "an auditor listing users")
	portaltest.Expect(t, p.Do("GET", "/api/v1/users/"+dev.ID, audTok, nil), http.StatusOK, "an auditor reading a user")
	role := "admin"
	portaltest.Expect(t, p.Do("PATCH", "/api/v1/users/"+aud.ID, audTok, models.UpdateUserRequest{Role: &role}), http.StatusForbidden, "an auditor making themselves admin")
	if crbs, rbs := bindingsOf(t, aud.ID); len(crbs) != 1 || crbs[0] != "mooring-auditor" || len(rbs) != 0 {
		t.Fatalf("auditor: want one ClusterRoleBinding to mooring-auditor, got %v %v", crbs, rbs)
	}

	// Role changes move the bindings; deleting the user removes them.
	p.Grant(adm, dev.ID, "auditor")
	if crbs, rbs := bindingsOf(t, dev.ID); len(crbs) != 1 || crbs[0] != "mooring-auditor" || len(rbs) != 0 {
		t.Fatalf("developer made auditor: want only a ClusterRoleBinding to mooring-auditor, got %v %v", crbs, rbs)
	}
	portaltest.Expect(t, p.Do("POST", "/api/v1/namespaces/"+nsA+"/apps", devTok, portaltest.App("web2")), http.StatusForbidden, "a former developer creating an App")
	portaltest.Expect(t, p.Do("DELETE", "/api/v1/users/"+dev.ID, adm, nil), http.StatusNoContent, "delete the user")
	if crbs, rbs := bindingsOf(t, dev.ID); len(crbs)+len(rbs) != 0 {
		t.Fatalf("a deleted user's bindings must go, left %v %v", crbs, rbs)
	}
	portaltest.Expect(t, p.Do("GET", "/api/v1/users/me", devTok, nil), http.StatusUnauthorized, "a deleted user's token")
	portaltest.Expect(t, p.Do("GET", "/api/v1/users/"+dev.ID, adm, nil), http.StatusNotFound, "a deleted user")
	bogus := []string{"Not_A_Namespace"}
	none := "developer"
	r = p.Do("PATCH", "/api/v1/users/"+aud.ID, adm, models.UpdateUserRequest{Role: &none, Namespaces: &bogus})
	portaltest.Expect(t, r, http.StatusUnprocessableEntity, "a bad namespace name")
	if e := r.Error(t); len(e.Fields) == 0 || e.Fields[0].Field != "namespaces[0]" {
		t.Fatalf("want the error to name namespaces[0], got %+v", e)
	}
}

// TestPortalCannotBecomeAnybody proves the portal's generated RBAC confines its
// impersonation to the users namespace's ServiceAccounts and the role groups.
func TestPortalCannotBecomeAnybody(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	tests := map[string]struct {
		imp     rest.ImpersonationConfig
		allowed bool
	}{
		"a portal user":                     {rest.ImpersonationConfig{UserName: "system:serviceaccount:mooring-portal-users:u-x", Groups: []string{"mooring-portal:developer"}}, true},
		"system:admin":                      {rest.ImpersonationConfig{UserName: "system:admin"}, false},
		"a system user":                     {rest.ImpersonationConfig{UserName: "system:kube-controller-manager"}, false},
		"group system:masters":              {rest.ImpersonationConfig{UserName: "system:serviceaccount:mooring-portal-users:u-x", Groups: []string{"system:masters"}}, false},
		"a ServiceAccount of kube-system":   {rest.ImpersonationConfig{UserName: "system:serviceaccount:kube-system:default", Groups: []string{"mooring-portal:admin"}}, false},
		"the portal's own ServiceAccount":   {rest.ImpersonationConfig{UserName: "system:serviceaccount:mooring-portal:mooring-portal", Groups: []string{"mooring-portal:admin"}}, false},
		"a user with extra fields":          {rest.ImpersonationConfig{UserName: "system:serviceaccount:mooring-portal-users:u-x", Groups: []string{"mooring-portal:admin"}, Extra: map[string][]string{"scopes": {"all"}}}, false},
		"a role group with no user allowed": {rest.ImpersonationConfig{UserName: "alice", Groups: []string{"mooring-portal:admin"}}, false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cfg := rest.CopyConfig(portalConfig)
			cfg.Impersonate = tc.imp
			cs, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				t.Fatal(err)
			}
			// Any request goes through impersonation first; listing namespaces is enough.
			_, err = cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{Limit: 1})
			impersonationDenied := err != nil && strings.Contains(err.Error(), "cannot impersonate")
			if tc.allowed && impersonationDenied {
				t.Fatalf("the portal must be able to impersonate %+v: %v", tc.imp, err)
			}
			if !tc.allowed && !impersonationDenied {
				t.Fatalf("the portal impersonated %+v (err: %v)", tc.imp, err)
			}
		})
	}
}

func TestRateLimitPerIPThenRecovers(t *testing.T) {
	p := newPortal(t, func(c *Config) { c.IPLimit = 3; c.RateWindow = 2 * time.Second })
	body := models.LoginRequest{Username: "nobody", Password: "whatever password"}
	for i := range 3 {
		r := p.Do("POST", "/api/v1/login", "", body)
		portaltest.Expect(t, r, http.StatusUnauthorized, "login within the limit")
		if got := r.Header.Get("RateLimit-Remaining"); got != strconv.Itoa(2-i) {
			t.Fatalf("request %d: RateLimit-Remaining %q, want %d", i+1, got, 2-i)
		}
	}
	r := p.Do("POST", "/api/v1/login", "", body)
	portaltest.Expect(t, r, http.StatusTooManyRequests, "the 4th login in the window")
	if r.Header.Get("Retry-After") == "" || r.Header.Get("RateLimit-Limit") != "3" {
		t.Fatalf("a 429 needs Retry-After and RateLimit-* headers, got %v", r.Header)
	}
	testutil.Eventually(t, 15*time.Second, "the limit to recover", func() error {
		if r := p.Do("POST", "/api/v1/login", "", body); r.Status != http.StatusUnauthorized {
			return errorf("still %d", r.Status)
		}
		return nil
	})
}
