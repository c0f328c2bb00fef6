package services

import (
	"testing"

	portalv1alpha1 "github.com/mooringhq/mooring/api/portal/v1alpha1"
	"github.com/mooringhq/mooring/internal/portal/cluster"
)

func TestProtectedWhy(t *testing.T) {
	p := Protected{Portal: []string{"mooring-portal", "mooring-portal-users"}, Operator: "mooring-system", Listed: []string{"vault"}}
	for ns, protected := range map[string]bool{
		"mooring-portal": true, "mooring-portal-users": true, "mooring-system": true, "kube-system": true,
		"kube-public": true, "vault": true, "team-a": false, "kubeflow": false, "mooring-portal-2": false,
	} {
		if got := p.Why(ns) != ""; got != protected {
			t.Errorf("%s: protected %v, want %v", ns, got, protected)
		}
	}
}

// TestDesiredBindsNobodyInProtectedNamespaces: a User that names a protected namespace
// (edited with kubectl, or granted before the namespace was protected) gets no
// RoleBinding there from the bindings reconciler.
func TestDesiredBindsNobodyInProtectedNamespaces(t *testing.T) {
	b := NewBindings(nil, cluster.NewImpersonator(nil, "mooring-portal-users"), DefaultRoleNames).
		Protecting(Protected{Portal: []string{"mooring-portal"}, Operator: "mooring-system"})
	u := &portalv1alpha1.User{Spec: portalv1alpha1.UserSpec{ID: "id", Role: portalv1alpha1.RoleDeveloper,
		Namespaces: []string{"kube-system", "mooring-portal", "mooring-system", "team-a"}}}
	_, rbs := b.Desired(u)
	if len(rbs) != 1 || rbs[0].Namespace != "team-a" {
		t.Fatalf("want one RoleBinding, in team-a, got %d: %+v", len(rbs), rbs)
	}
}
