package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mooringhq/mooring/internal/portal/models"
	"github.com/mooringhq/mooring/internal/portal/portaltest"
	"github.com/mooringhq/mooring/internal/testutil"
)

// create makes obj with the cluster-admin client and deletes it when the test ends.
func create(t *testing.T, obj client.Object) {
	t.Helper()
	if err := admin.Create(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := admin.Delete(context.Background(), obj); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete %s: %v", obj.GetName(), err)
		}
	})
}

func userSubject(id string) []rbacv1.Subject {
	return []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "u-" + id, Namespace: "mooring-portal-users"}}
}

// TestGrantingARoleNeedsBind: the right to update users is not the right to hand out
// roles. The portal binds with its own ServiceAccount, so it asks first whether the
// acting user may bind the role's ClusterRole there, as the API server asks anyone who
// creates a binding; a user manager without bind cannot make anyone an admin.
func TestGrantingARoleNeedsBind(t *testing.T) {
	p := newPortal(t, nil)
	adm := p.adminToken()
	nsA, nsB := env.Namespace(t), env.Namespace(t)
	mgr, mgrPw := p.Register("usermgr")
	target, _ := p.Register("target")

	// The manager may read and update users, and bind nothing.
	name := "test-user-manager-" + mgr.ID
	create(t, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"portal.mooring.dev"}, Resources: []string{"users"}, Verbs: []string{"get", "list", "update"}},
	}})
	create(t, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects: userSubject(mgr.ID)})
	tok := p.Login(mgr.Username, mgrPw).AccessToken
	testutil.Eventually(t, 10*time.Second, "the manager's RBAC to apply", func() error {
		if r := p.Do("GET", "/api/v1/users/"+target.ID, tok, nil); r.Status != http.StatusOK {
			return errorf("get a user: %d %s", r.Status, r.Body)
		}
		return nil
	})

	patch := func(role string, namespaces ...string) portaltest.Reply {
		req := models.UpdateUserRequest{Role: &role}
		if namespaces != nil {
			req.Namespaces = &namespaces
		}
		return p.Do("PATCH", "/api/v1/users/"+target.ID, tok, req)
	}
	refused := func(r portaltest.Reply, role, what string) {
		t.Helper()
		portaltest.Expect(t, r, http.StatusForbidden, what)
		if e := r.Error(t); e.Code != "Forbidden" || !strings.Contains(e.Message, role) {
			t.Fatalf("%s: want a Forbidden naming the role %s, got %+v", what, role, e)
		}
	}
	for _, role := range []string{"admin", "auditor"} {
		refused(patch(role), role, "a user manager without bind granting "+role)
	}
	refused(patch("developer", nsA), "developer", "a user manager without bind granting developer")
	if crbs, rbs := bindingsOf(t, target.ID); len(crbs)+len(rbs) != 0 {
		t.Fatalf("a refused grant left bindings: %v %v", crbs, rbs)
	}
	var got models.User
	r := p.Do("GET", "/api/v1/users/"+target.ID, adm, nil)
	portaltest.Expect(t, r, http.StatusOK, "get the target")
	if r.Decode(t, &got); got.Role != "none" {
		t.Fatalf("a refused grant changed the role to %s", got.Role)
	}

	// bind on mooring-developer in namespace A only: developer in A, not in B.
	bindDev := name + "-bind-developer"
	create(t, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: bindDev}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"clusterroles"}, Verbs: []string{"bind"}, ResourceNames: []string{"mooring-developer"}},
	}})
	create(t, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: bindDev, Namespace: nsA},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: bindDev},
		Subjects: userSubject(mgr.ID)})
	testutil.Eventually(t, 10*time.Second, "developer in the namespace the manager may bind in", func() error {
		if r := patch("developer", nsA); r.Status != http.StatusOK {
			return errorf("%d %s", r.Status, r.Body)
		}
		return nil
	})
	refused(patch("developer", nsA, nsB), "developer", "a developer namespace the manager may not bind in")
	refused(patch("admin"), "admin", "admin with bind on mooring-developer only")
	// Taking a role away grants nothing.
	portaltest.Expect(t, patch("none"), http.StatusOK, "a manager taking the role away")

	// An admin may grant every role.
	p.Grant(adm, target.ID, "admin")
	if crbs, _ := bindingsOf(t, target.ID); len(crbs) != 1 || crbs[0] != "mooring-admin" {
		t.Fatalf("admin: want a ClusterRoleBinding to mooring-admin, got %v", crbs)
	}
	p.Grant(adm, target.ID, "developer", nsA, nsB)
	p.Grant(adm, target.ID, "auditor")
}
