package controller_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	portalv1alpha1 "github.com/mooringhq/mooring/api/portal/v1alpha1"
	"github.com/mooringhq/mooring/internal/portal/controller"
	"github.com/mooringhq/mooring/internal/testutil"
)

// teamBindingsOf lists the team's RoleBindings as "<namespace> -> <role> [<subjects>]",
// the subjects by ServiceAccount name, sorted.
func teamBindingsOf(team string) ([]string, error) {
	var rbs rbacv1.RoleBindingList
	if err := admin.List(context.Background(), &rbs, client.MatchingLabels{portalv1alpha1.TeamLabel: team}); err != nil {
		return nil, err
	}
	var out []string
	for _, b := range rbs.Items {
		var subjects []string
		for _, s := range b.Subjects {
			subjects = append(subjects, s.Name)
		}
		out = append(out, fmt.Sprintf("%s/%s -> %s [%s]", b.Namespace, b.Name, b.RoleRef.Name, strings.Join(subjects, " ")))
	}
	slices.Sort(out)
	return out, nil
}

func waitTeamBindings(t *testing.T, team, what string, want ...string) {
	t.Helper()
	slices.Sort(want)
	testutil.Eventually(t, converge, what, func() error {
		got, err := teamBindingsOf(team)
		if err != nil {
			return err
		}
		if !slices.Equal(got, want) {
			return fmt.Errorf("team bindings %q, want %q", got, want)
		}
		return nil
	})
}

func ssoUser(t *testing.T, groups ...string) *portalv1alpha1.User {
	t.Helper()
	u := newUser(t, portalv1alpha1.RoleNone)
	u.Spec.SSO = &portalv1alpha1.SSOIdentity{Issuer: "https://idp.example.com", Subject: u.Spec.ID}
	if err := admin.Update(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	setGroups(t, u, groups...)
	return u
}

func setGroups(t *testing.T, u *portalv1alpha1.User, groups ...string) {
	t.Helper()
	testutil.Update(t, admin, client.ObjectKeyFromObject(u), &portalv1alpha1.User{}, func(o *portalv1alpha1.User) {})
	cur := &portalv1alpha1.User{}
	if err := admin.Get(context.Background(), client.ObjectKeyFromObject(u), cur); err != nil {
		t.Fatal(err)
	}
	cur.Status.Groups = groups
	if err := admin.Status().Update(context.Background(), cur); err != nil {
		t.Fatal(err)
	}
}

// TestTeamBindingsFollowMembers: a team's RoleBinding in each of its namespaces names
// exactly its members' identities, whether named or in one of its groups, and follows
// the Team, the Users (a new groups claim, a deletion) and hands on its bindings; a
// protected namespace is never bound; a converged team costs no write.
func TestTeamBindingsFollowMembers(t *testing.T) {
	ctx := context.Background()
	nsA, nsB := env.Namespace(t), env.Namespace(t)
	ann, bob := newUser(t, portalv1alpha1.RoleNone), newUser(t, portalv1alpha1.RoleDeveloper)
	group := "g-" + uuid.NewString()[:8]
	carol := ssoUser(t, "other", group)
	// A local account with the group in its status is no member: only a provider vouches.
	dave := newUser(t, portalv1alpha1.RoleNone)
	setGroups(t, dave, group)

	team := &portalv1alpha1.Team{ObjectMeta: metav1.ObjectMeta{Name: "team-" + uuid.NewString()[:8]},
		Spec: portalv1alpha1.TeamSpec{Role: "developer", Members: []string{ann.Spec.Username}, Groups: []string{group},
			Namespaces: []string{nsA, nsB, listedProtected}}}
	if err := admin.Create(ctx, team); err != nil {
		t.Fatal(err)
	}
	name := "mooring-portal-team-" + team.Name
	both := func(sas ...string) []string {
		slices.Sort(sas)
		s := strings.Join(sas, " ")
		return []string{fmt.Sprintf("%s/%s -> mooring-developer [%s]", nsA, name, s), fmt.Sprintf("%s/%s -> mooring-developer [%s]", nsB, name, s)}
	}
	sa := func(u *portalv1alpha1.User) string { return "u-" + u.Spec.ID }
	waitTeamBindings(t, team.Name, "a RoleBinding in each unprotected namespace naming the named member and the group's", both(sa(ann), sa(carol))...)
	testutil.WaitFor(t, admin, client.ObjectKeyFromObject(team), &portalv1alpha1.Team{}, "the team's status to name its members", func(o *portalv1alpha1.Team) error {
		want := []string{ann.Spec.Username, carol.Spec.Username}
		slices.Sort(want)
		if !slices.Equal(o.Status.Members, want) || o.Status.ObservedGeneration != o.Generation || len(o.Status.Conditions) != 1 ||
			o.Status.Conditions[0].Status != metav1.ConditionTrue {
			return fmt.Errorf("status %+v, want members %v, the generation observed and Ready", o.Status, want)
		}
		return nil
	})

	// Converged: a touch that changes nothing the team grants writes nothing (a new
	// generation would: the status records the generation it describes).
	testutil.ExpectNoWrites(t, "portal-teams", 1, func() {
		testutil.Update(t, admin, client.ObjectKeyFromObject(team), &portalv1alpha1.Team{}, func(o *portalv1alpha1.Team) {
			o.SetAnnotations(map[string]string{"example.com/touched": "yes"})
		})
	})

	// Subjects edited by hand come back.
	testutil.Update(t, admin, client.ObjectKey{Namespace: nsA, Name: name}, &rbacv1.RoleBinding{}, func(rb *rbacv1.RoleBinding) {
		rb.Subjects = append(rb.Subjects, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: sa(dave), Namespace: "mooring-portal-users"})
	})
	waitTeamBindings(t, team.Name, "a subject added by hand removed", both(sa(ann), sa(carol))...)

	// A named member removed, another added.
	testutil.Update(t, admin, client.ObjectKeyFromObject(team), &portalv1alpha1.Team{}, func(o *portalv1alpha1.Team) {
		o.Spec.Members = []string{bob.Spec.Username}
	})
	waitTeamBindings(t, team.Name, "the removed member's identity gone, the new member's there", both(sa(bob), sa(carol))...)

	// A new groups claim without the team's group leaves the team.
	setGroups(t, carol, "other")
	waitTeamBindings(t, team.Name, "the user whose groups changed gone", both(sa(bob))...)

	// A deleted member goes; a team without members binds nothing.
	if err := admin.Delete(ctx, bob); err != nil {
		t.Fatal(err)
	}
	waitTeamBindings(t, team.Name, "no binding once the last member is deleted")

	// Back through the group, then the team goes: its bindings go with it (envtest has
	// no garbage collector: the reconciler does it).
	setGroups(t, carol, group)
	waitTeamBindings(t, team.Name, "the group's member bound again", both(sa(carol))...)
	if err := admin.Delete(ctx, team); err != nil {
		t.Fatal(err)
	}
	waitTeamBindings(t, team.Name, "no binding left once the Team is gone")
}

// TestTeamBindingFollowsNamespaceCreation: a team naming a namespace that does not exist
// yet says so in its Ready condition, and gets its binding there as soon as the
// namespace is created, not at the next 2-minute retry.
func TestTeamBindingFollowsNamespaceCreation(t *testing.T) {
	ctx := context.Background()
	there := env.Namespace(t)
	later := "later-" + uuid.NewString()[:8]
	u := newUser(t, portalv1alpha1.RoleNone)
	team := &portalv1alpha1.Team{ObjectMeta: metav1.ObjectMeta{Name: "team-" + uuid.NewString()[:8]},
		Spec: portalv1alpha1.TeamSpec{Role: "auditor", Members: []string{u.Spec.Username}, Namespaces: []string{there, later}}}
	if err := admin.Create(ctx, team); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Delete(ctx, team) })
	name := "mooring-portal-team-" + team.Name
	rb := func(ns string) string {
		return fmt.Sprintf("%s/%s -> mooring-auditor [u-%s]", ns, name, u.Spec.ID)
	}
	waitTeamBindings(t, team.Name, "the binding in the existing namespace only", rb(there))
	testutil.WaitFor(t, admin, client.ObjectKeyFromObject(team), &portalv1alpha1.Team{}, "the team to say a namespace is missing", func(o *portalv1alpha1.Team) error {
		if c := meta.FindStatusCondition(o.Status.Conditions, controller.TeamReady); c == nil || c.Reason != controller.ReasonNamespaceMissing ||
			!strings.Contains(c.Message, later) {
			return fmt.Errorf("conditions %+v, want Ready False (NamespaceMissing) naming %s", o.Status.Conditions, later)
		}
		return nil
	})
	testutil.Settle(t)

	created := time.Now()
	if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: later}}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, arrival, "a binding in the namespace within "+arrival.String()+" of its creation", func() error {
		got, err := teamBindingsOf(team.Name)
		if err != nil {
			return err
		}
		if want := slices.Sorted(slices.Values([]string{rb(there), rb(later)})); !slices.Equal(got, want) {
			return fmt.Errorf("team bindings %q, want %q", got, want)
		}
		return nil
	})
	t.Logf("team binding in the created namespace after %s", time.Since(created).Round(time.Millisecond))
	testutil.WaitFor(t, admin, client.ObjectKeyFromObject(team), &portalv1alpha1.Team{}, "the team Ready", func(o *portalv1alpha1.Team) error {
		if !meta.IsStatusConditionTrue(o.Status.Conditions, controller.TeamReady) {
			return fmt.Errorf("conditions %+v, want Ready True", o.Status.Conditions)
		}
		return nil
	})
}

// TestTeamNamesAreValidated: the API server refuses a Team whose name cannot name its
// RoleBindings, or whose role is no team role.
func TestTeamNamesAreValidated(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	for what, team := range map[string]*portalv1alpha1.Team{
		"a name over 43 characters": {ObjectMeta: metav1.ObjectMeta{Name: strings.Repeat("a", 44)}, Spec: portalv1alpha1.TeamSpec{Role: "developer"}},
		"a dotted name":             {ObjectMeta: metav1.ObjectMeta{Name: "a.b"}, Spec: portalv1alpha1.TeamSpec{Role: "developer"}},
		"the admin role":            {ObjectMeta: metav1.ObjectMeta{Name: "admins-" + uuid.NewString()[:8]}, Spec: portalv1alpha1.TeamSpec{Role: "admin"}},
		"a namespace that is no DNS label": {ObjectMeta: metav1.ObjectMeta{Name: "ns-" + uuid.NewString()[:8]},
			Spec: portalv1alpha1.TeamSpec{Role: "auditor", Namespaces: []string{"Not_A_Namespace"}}},
	} {
		if err := admin.Create(ctx, team); !apierrors.IsInvalid(err) {
			_ = admin.Delete(ctx, team)
			t.Errorf("%s: want 422 Invalid, got %v", what, err)
		}
	}
}
