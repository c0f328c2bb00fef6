package controller_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	portalv1alpha1 "github.com/mooringhq/mooring/api/portal/v1alpha1"
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
			Namespaces: []string{nsA, nsB, "kube-public"}}}
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
