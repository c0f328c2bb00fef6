package services

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	portalv1alpha1 "github.com/mooringhq/mooring/api/portal/v1alpha1"
	"github.com/mooringhq/mooring/internal/portal/cluster"
)

func teamBindings() *Bindings {
	return NewBindings(nil, cluster.NewImpersonator(&rest.Config{}, "mooring-portal-users"), DefaultRoleNames).
		Protecting(Protected{Portal: []string{"mooring-portal"}, Operator: "mooring-system"})
}

func TestDesiredForTeam(t *testing.T) {
	b := teamBindings()
	team := &portalv1alpha1.Team{ObjectMeta: metav1.ObjectMeta{Name: "payments", UID: "uid-1"},
		Spec: portalv1alpha1.TeamSpec{Role: "auditor", Namespaces: []string{"pay", "mooring-portal", "kube-system", "pay-stage"}}}
	zed := &portalv1alpha1.User{Spec: portalv1alpha1.UserSpec{ID: "b-id", Username: "zed"}}
	ann := &portalv1alpha1.User{Spec: portalv1alpha1.UserSpec{ID: "a-id", Username: "ann", Role: portalv1alpha1.RoleAdmin}}

	if rbs := b.DesiredForTeam(team, nil); rbs != nil {
		t.Fatalf("a team without members: want no bindings, got %v", rbs)
	}
	rbs := b.DesiredForTeam(team, []*portalv1alpha1.User{zed, ann})
	if len(rbs) != 2 || rbs[0].Namespace != "pay" || rbs[1].Namespace != "pay-stage" {
		t.Fatalf("want RoleBindings in pay and pay-stage only (the protected namespaces never), got %+v", rbs)
	}
	rb := rbs[0]
	if rb.Name != "mooring-portal-team-payments" || rb.Labels[portalv1alpha1.TeamLabel] != "payments" ||
		rb.OwnerReferences[0].Kind != "Team" || rb.OwnerReferences[0].UID != "uid-1" {
		t.Fatalf("name, team label or owner wrong: %+v", rb.ObjectMeta)
	}
	if rb.RoleRef.Name != "mooring-auditor" {
		t.Fatalf("role %s, want mooring-auditor", rb.RoleRef.Name)
	}
	// Sorted by identity, whatever the members' roles: a team grants the same to all.
	want := []rbacv1.Subject{
		{Kind: rbacv1.ServiceAccountKind, Name: "u-a-id", Namespace: "mooring-portal-users"},
		{Kind: rbacv1.ServiceAccountKind, Name: "u-b-id", Namespace: "mooring-portal-users"},
	}
	if len(rb.Subjects) != 2 || rb.Subjects[0] != want[0] || rb.Subjects[1] != want[1] {
		t.Fatalf("subjects %v, want %v", rb.Subjects, want)
	}
	if gs := b.TeamGrants(team); len(gs) != 2 || gs[0] != (Grant{ClusterRole: "mooring-auditor", Namespace: "pay"}) {
		t.Fatalf("TeamGrants = %v", gs)
	}
}

func TestPlanBindings(t *testing.T) {
	rb := func(ns, role string, subjects ...string) *rbacv1.RoleBinding {
		b := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: ns, ResourceVersion: "7"},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role}}
		for _, s := range subjects {
			b.Subjects = append(b.Subjects, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: s, Namespace: "u"})
		}
		return b
	}
	keys := func(os []client.Object) []string {
		var out []string
		for _, o := range os {
			out = append(out, o.GetNamespace())
		}
		return out
	}
	have := []client.Object{rb("same", "dev", "a"), rb("members", "dev", "a"), rb("role", "dev", "a"), rb("gone", "dev", "a")}
	want := []client.Object{rb("same", "dev", "a"), rb("members", "dev", "a", "b"), rb("role", "aud", "a"), rb("new", "dev", "a")}
	p := planBindings(have, want)
	if got := keys(p.Update); len(got) != 1 || got[0] != "members" {
		t.Fatalf("updates %v, want [members]: subjects change in place, so other members keep access", got)
	}
	if u := p.Update[0].(*rbacv1.RoleBinding); len(u.Subjects) != 2 || u.ResourceVersion != "7" {
		t.Fatalf("update %+v: want the new subjects on the current object", u)
	}
	if got := keys(p.Delete); len(got) != 2 || got[0] != "role" || got[1] != "gone" {
		t.Fatalf("deletes %v, want [role gone]: a roleRef cannot change in place", got)
	}
	if got := keys(p.Create); len(got) != 2 || got[0] != "role" || got[1] != "new" {
		t.Fatalf("creates %v, want [role new]", got)
	}
	if p := planBindings(want, want); !p.Empty() {
		t.Fatalf("in step: want an empty plan, got %+v", p)
	}
}
