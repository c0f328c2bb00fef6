package server_test

import (
	"context"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	portalv1alpha1 "github.com/mooringhq/mooring/api/portal/v1alpha1"
	"github.com/mooringhq/mooring/internal/portal/server"
	"github.com/mooringhq/mooring/internal/testutil"
)

// TestEditingAUserDirectlyNeedsBind: the portal asks whether the acting user may bind a
// role before it grants it, but a User can also be edited with kubectl, and the portal's
// ServiceAccount, which writes the bindings, may bind every role. config/portal's
// ValidatingAdmissionPolicy asks the API server the portal's question for whoever writes
// the User: with update on users and no bind, kubectl edit cannot make anyone an admin.
func TestEditingAUserDirectlyNeedsBind(t *testing.T) {
	p := newPortal(t, nil)
	ctx := context.Background()
	nsA, nsB := env.Namespace(t), env.Namespace(t)
	target, _ := p.Register("edited")
	var users portalv1alpha1.UserList
	if err := admin.List(ctx, &users, client.MatchingLabels{portalv1alpha1.IDLabel: target.ID}); err != nil || len(users.Items) != 1 {
		t.Fatalf("want the registered user's User object, got %d (%v)", len(users.Items), err)
	}
	key := client.ObjectKeyFromObject(&users.Items[0])

	// An editor that may update users and bind nothing, as kubectl would act for it.
	editor := "test-user-editor-" + target.ID
	create(t, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: editor}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"portal.mooring.dev"}, Resources: []string{"users"}, Verbs: []string{"get", "list", "update"}},
	}})
	create(t, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: editor},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: editor},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: editor}}})
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: editor}
	kubectl, err := client.New(cfg, client.Options{Scheme: server.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	set := func(role portalv1alpha1.Role, namespaces ...string) error {
		var u portalv1alpha1.User
		if err := kubectl.Get(ctx, key, &u); err != nil {
			return err
		}
		u.Spec.Role, u.Spec.Namespaces = role, namespaces
		return kubectl.Update(ctx, &u)
	}
	// A denial by the policy is Forbidden (the reason it gives) or Invalid; the test takes either.
	denied := func(err error) bool { return apierrors.IsForbidden(err) || apierrors.IsInvalid(err) }
	refused := func(err error, field, names, what string) {
		t.Helper()
		if !denied(err) {
			t.Fatalf("%s: want the policy to refuse it, got %v", what, err)
		}
		for _, s := range []string{field, names, editor} {
			if !strings.Contains(err.Error(), s) {
				t.Fatalf("%s: want a message naming %q, got %v", what, s, err)
			}
		}
	}

	// The API server takes the editor's RBAC and the policy into force within moments.
	var err0 error
	testutil.Eventually(t, 10*time.Second, "the policy to refuse an editor without bind granting admin", func() error {
		if err0 = set(portalv1alpha1.RoleAdmin); err0 == nil || !denied(err0) || strings.Contains(err0.Error(), "cannot get") {
			// Granted before the policy took hold: take it back and ask again.
			if err0 == nil {
				if err := set(portalv1alpha1.RoleNone); err != nil {
					return err
				}
			}
			return errorf("want a refusal, got %v", err0)
		}
		return nil
	})
	refused(err0, "spec.role", "mooring-admin", "an editor without bind granting admin")
	refused(set(portalv1alpha1.RoleAuditor), "spec.role", "mooring-auditor", "an editor without bind granting auditor")
	refused(set(portalv1alpha1.RoleDeveloper, nsA), "spec.namespaces", nsA, "an editor without bind granting developer")
	// A developer with no namespace is bound nowhere: nothing is granted.
	if err := set(portalv1alpha1.RoleDeveloper); err != nil {
		t.Fatalf("developer in no namespace grants nothing, want it allowed: %v", err)
	}

	// bind on mooring-developer in namespace A only.
	bindDev := editor + "-bind-developer"
	create(t, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: bindDev}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"clusterroles"}, Verbs: []string{"bind"}, ResourceNames: []string{"mooring-developer"}},
	}})
	create(t, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: bindDev, Namespace: nsA},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: bindDev},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: editor}}})
	testutil.Eventually(t, 10*time.Second, "developer in the namespace the editor may bind in", func() error {
		return set(portalv1alpha1.RoleDeveloper, nsA)
	})
	err = set(portalv1alpha1.RoleDeveloper, nsA, nsB)
	refused(err, "spec.namespaces", nsB, "a namespace the editor may not bind in")
	if strings.Contains(err.Error(), nsA+",") || strings.Contains(err.Error(), " "+nsA+" ") {
		t.Fatalf("the refusal names %s, where the editor may bind and which it already had: %v", nsA, err)
	}
	// More than two new namespaces at once, without bind cluster-wide: a message of ours,
	// not the API server's about its CEL cost limit (authorizer questions are costly).
	err = set(portalv1alpha1.RoleDeveloper, nsA, "many-1", "many-2", "many-3")
	refused(err, "spec.namespaces", "add at most 2 namespaces per edit", "three new namespaces without bind cluster-wide")
	if strings.Contains(err.Error(), "cost") {
		t.Fatalf("three new namespaces: want the policy's own message, got the API server's: %v", err)
	}
	// Two new namespaces where the editor may bind in both: three authorizer questions
	// (cluster-wide, then each namespace), within the limit.
	nsC := env.Namespace(t)
	for _, ns := range []string{nsB, nsC} {
		create(t, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: bindDev, Namespace: ns},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: bindDev},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: editor}}})
	}
	testutil.Eventually(t, 10*time.Second, "developer in two new namespaces the editor may bind in", func() error {
		return set(portalv1alpha1.RoleDeveloper, nsA, nsB, nsC)
	})
	refused(set(portalv1alpha1.RoleAdmin), "spec.role", "mooring-admin", "admin with bind on mooring-developer only")
	// Taking a role away grants nothing.
	if err := set(portalv1alpha1.RoleNone); err != nil {
		t.Fatalf("taking the role away: %v", err)
	}

	// Someone who may bind (here cluster-admin) grants as before.
	var u portalv1alpha1.User
	if err := admin.Get(ctx, key, &u); err != nil {
		t.Fatal(err)
	}
	u.Spec.Role = portalv1alpha1.RoleAdmin
	if err := admin.Update(ctx, &u); err != nil {
		t.Fatalf("cluster-admin granting admin: %v", err)
	}
	// And developer in five namespaces in one edit: asked namespace by namespace, the
	// policy's authorizer calls went over the API server's CEL cost budget at the third,
	// and cluster-admin was refused.
	if err := admin.Get(ctx, key, &u); err != nil {
		t.Fatal(err)
	}
	u.Spec.Role, u.Spec.Namespaces = portalv1alpha1.RoleDeveloper, []string{"d-1", "d-2", "d-3", "d-4", "d-5"}
	if err := admin.Update(ctx, &u); err != nil {
		t.Fatalf("cluster-admin granting developer in five namespaces at once: %v", err)
	}
}
