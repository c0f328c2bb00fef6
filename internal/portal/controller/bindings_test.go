package controller_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	coordinationv1 "k8s.io/api/coordination/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	portalv1alpha1 "github.com/mooringhq/mooring/api/portal/v1alpha1"
	"github.com/mooringhq/mooring/internal/devenv"
	"github.com/mooringhq/mooring/internal/portal/controller"
	"github.com/mooringhq/mooring/internal/testutil"
)

// converge is how long the reconciler may take on a loaded machine.
const converge = 30 * time.Second

// bindingsOf lists the user's bindings as "<kind> <namespace>/<name> -> <role>", sorted.
func bindingsOf(id string) ([]string, error) {
	ctx := context.Background()
	sel := client.MatchingLabels{portalv1alpha1.IDLabel: id}
	var crbs rbacv1.ClusterRoleBindingList
	var rbs rbacv1.RoleBindingList
	if err := admin.List(ctx, &crbs, sel); err != nil {
		return nil, err
	}
	if err := admin.List(ctx, &rbs, sel); err != nil {
		return nil, err
	}
	var out []string
	for _, b := range crbs.Items {
		out = append(out, fmt.Sprintf("ClusterRoleBinding %s -> %s", b.Name, b.RoleRef.Name))
	}
	for _, b := range rbs.Items {
		out = append(out, fmt.Sprintf("RoleBinding %s/%s -> %s", b.Namespace, b.Name, b.RoleRef.Name))
	}
	slices.Sort(out)
	return out, nil
}

func waitBindings(t *testing.T, id, what string, want ...string) {
	t.Helper()
	waitBindingsWithin(t, converge, id, what, want...)
}

// waitBindingsWithin polls until the user's bindings are exactly want, for at most timeout.
func waitBindingsWithin(t *testing.T, timeout time.Duration, id, what string, want ...string) {
	t.Helper()
	slices.Sort(want)
	testutil.Eventually(t, timeout, what, func() error {
		got, err := bindingsOf(id)
		if err != nil {
			return err
		}
		if !slices.Equal(got, want) {
			return fmt.Errorf("bindings %q, want %q", got, want)
		}
		return nil
	})
}

func newUser(t *testing.T, role portalv1alpha1.Role, namespaces ...string) *portalv1alpha1.User {
	t.Helper()
	id := uuid.NewString()
	u := &portalv1alpha1.User{
		ObjectMeta: metav1.ObjectMeta{Name: "u-" + id[:8], Labels: map[string]string{portalv1alpha1.IDLabel: id}},
		Spec:       portalv1alpha1.UserSpec{ID: id, Username: "u-" + id[:8], Email: "u@example.com", Role: role, Namespaces: namespaces},
	}
	if err := admin.Create(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	return u
}

// handMade is a binding someone made by hand under the user's label.
func handMade(u *portalv1alpha1.User, ns, role string) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "by-hand", Namespace: ns,
			Labels: map[string]string{portalv1alpha1.IDLabel: u.Spec.ID, "app.kubernetes.io/name": "mooring-portal"}},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "u-" + u.Spec.ID, Namespace: "mooring-portal-users"}},
	}
}

// TestBindingsFollowTheUser changes a developer's bindings behind the portal's back and
// the user's role through the User object: the reconciler puts back what is missing,
// removes what the user should not have, and removes everything with the user.
func TestBindingsFollowTheUser(t *testing.T) {
	ctx := context.Background()
	nsA, nsB, nsC := env.Namespace(t), env.Namespace(t), env.Namespace(t)
	u := newUser(t, portalv1alpha1.RoleDeveloper, nsA, nsB)
	name := "mooring-portal-" + u.Spec.ID
	rbA, rbB := fmt.Sprintf("RoleBinding %s/%s -> mooring-developer", nsA, name), fmt.Sprintf("RoleBinding %s/%s -> mooring-developer", nsB, name)
	waitBindings(t, u.Spec.ID, "a developer's RoleBinding in each namespace", rbA, rbB)

	// A hand-deleted binding comes back.
	if err := admin.Delete(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: nsA, Name: name}}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, converge, "the deleted RoleBinding to come back", func() error {
		rb := &rbacv1.RoleBinding{}
		if err := admin.Get(ctx, types.NamespacedName{Namespace: nsA, Name: name}, rb); err != nil {
			return err
		}
		return nil
	})

	// Hand-made bindings under the user's label go: in a namespace the user does not
	// have, and one in a namespace it has that is not the portal's.
	for _, rb := range []*rbacv1.RoleBinding{handMade(u, nsC, "mooring-developer"), handMade(u, nsA, "mooring-admin")} {
		if err := admin.Create(ctx, rb); err != nil {
			t.Fatal(err)
		}
	}
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "by-hand-" + u.Spec.ID, Labels: map[string]string{portalv1alpha1.IDLabel: u.Spec.ID}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "mooring-admin"},
		Subjects:   handMade(u, nsA, "").Subjects,
	}
	if err := admin.Create(ctx, crb); err != nil {
		t.Fatal(err)
	}
	waitBindings(t, u.Spec.ID, "hand-made bindings under the user's label removed", rbA, rbB)

	// Converged: a User change that changes no binding writes nothing.
	testutil.ExpectNoWrites(t, "portal-bindings", 1, func() {
		testutil.Update(t, admin, client.ObjectKeyFromObject(u), &portalv1alpha1.User{}, func(o *portalv1alpha1.User) {
			o.Spec.Email = "new@example.com"
		})
	})

	// A role changed on the User itself (not through the portal's API) is followed.
	testutil.Update(t, admin, client.ObjectKeyFromObject(u), &portalv1alpha1.User{}, func(o *portalv1alpha1.User) {
		o.Spec.Role, o.Spec.Namespaces = portalv1alpha1.RoleAuditor, nil
	})
	waitBindings(t, u.Spec.ID, "an auditor's ClusterRoleBinding instead", "ClusterRoleBinding "+name+" -> mooring-auditor")

	// A deleted User's bindings go (envtest has no garbage collector: the reconciler
	// does it, not the owner references).
	if err := admin.Delete(ctx, u); err != nil {
		t.Fatal(err)
	}
	waitBindings(t, u.Spec.ID, "no binding left once the User is gone")
}

// TestReconcilerHoldsTheLease: the reconciler runs only once it holds the portal's
// Lease, so of several replicas only one writes bindings.
func TestReconcilerHoldsTheLease(t *testing.T) {
	env.Require(t)
	testutil.Eventually(t, converge, "the Lease "+controller.LeaseName+" to be held", func() error {
		l := &coordinationv1.Lease{}
		if err := admin.Get(context.Background(), types.NamespacedName{Namespace: devenv.PortalNamespace, Name: controller.LeaseName}, l); err != nil {
			return err
		}
		if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
			return fmt.Errorf("lease has no holder")
		}
		return nil
	})
}
