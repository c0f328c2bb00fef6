package services

import (
	"context"
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	portalv1alpha1 "github.com/mooringhq/mooring/api/portal/v1alpha1"
)

// TeamBindingName is the name of the RoleBinding a team gets in each of its namespaces.
func TeamBindingName(team string) string { return "mooring-portal-team-" + team }

// TeamOwnerRef makes a binding go with its Team (as store.OwnerRef does with a User's).
func TeamOwnerRef(t *portalv1alpha1.Team) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: portalv1alpha1.GroupVersion.String(), Kind: "Team", Name: t.Name, UID: t.UID}
}

// TeamNamespaces returns the namespaces t gets a RoleBinding in: its namespaces but the
// protected ones (a Team edited with kubectl, or made before a namespace was protected,
// still binds nothing there).
func (b *Bindings) TeamNamespaces(t *portalv1alpha1.Team) []string {
	var out []string
	for _, ns := range t.Spec.Namespaces {
		if b.protected.Why(ns) == "" {
			out = append(out, ns)
		}
	}
	return out
}

// DesiredForTeam returns the RoleBindings t should have with members in it; pure, for
// tests. The subjects are the members' ServiceAccount identities, sorted, the same
// identities the portal impersonates for them, so the API server decides a member's
// request by the team's binding as by a grant of its own. A team without members has
// no bindings: they would grant nothing.
func (b *Bindings) DesiredForTeam(t *portalv1alpha1.Team, members []*portalv1alpha1.User) []rbacv1.RoleBinding {
	if len(members) == 0 || t == nil {
		return nil
	}
	subjects := make([]rbacv1.Subject, 0, len(members))
	for _, u := range members {
		subjects = append(subjects, b.subject(u)...)
	}
	slices.SortFunc(subjects, func(a, c rbacv1.Subject) int { return strings.Compare(a.Name, c.Name) })
	return b.teamRoleBindings(t, slices.Compact(subjects))
}

// teamRoleBindings are t's RoleBindings with subjects.
func (b *Bindings) teamRoleBindings(t *portalv1alpha1.Team, subjects []rbacv1.Subject) []rbacv1.RoleBinding {
	ref := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: b.roles[portalv1alpha1.Role(t.Spec.Role)]}
	var rbs []rbacv1.RoleBinding
	for _, ns := range b.TeamNamespaces(t) {
		rbs = append(rbs, rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{
				Name:      TeamBindingName(t.Name),
				Namespace: ns,
				Labels: map[string]string{
					portalv1alpha1.TeamLabel: t.Name,
					"app.kubernetes.io/name": "mooring-portal",
				},
				OwnerReferences: []metav1.OwnerReference{TeamOwnerRef(t)},
			},
			RoleRef:  ref,
			Subjects: slices.Clone(subjects),
		})
	}
	return rbs
}

// TeamGrants returns the ClusterRoles t's bindings grant, and where.
func (b *Bindings) TeamGrants(t *portalv1alpha1.Team) []Grant {
	var gs []Grant
	for _, ns := range b.TeamNamespaces(t) {
		gs = append(gs, Grant{ClusterRole: b.roles[portalv1alpha1.Role(t.Spec.Role)], Namespace: ns})
	}
	return gs
}

// PlanForTeam compares the RoleBindings labelled with the team name, read from r, with
// what t should have with members in it (nothing when t is nil: the team is gone).
func (b *Bindings) PlanForTeam(ctx context.Context, r client.Reader, name string, t *portalv1alpha1.Team, members []*portalv1alpha1.User) (Plan, error) {
	rbs := b.DesiredForTeam(t, members)
	want := make([]client.Object, 0, len(rbs))
	for i := range rbs {
		want = append(want, &rbs[i])
	}
	return b.plan(ctx, r, holder{label: portalv1alpha1.TeamLabel, value: name, namespacedOnly: true}, want)
}

// CheckTeamNamespaces refuses a team's namespaces that do not exist, by a dry run of
// its RoleBindings (the field names the namespace's index in the team's spec).
func (b *Bindings) CheckTeamNamespaces(ctx context.Context, t *portalv1alpha1.Team) error {
	rbs := b.teamRoleBindings(t, nil)
	for i := range rbs {
		rbs[i].OwnerReferences = nil // a new team has no uid yet
	}
	return b.checkNamespaces(ctx, rbs, func(ns string) string {
		return fmt.Sprintf("namespaces[%d]", slices.Index(t.Spec.Namespaces, ns))
	})
}

// SyncTeam makes the cluster's bindings of t exactly what its members, read straight
// from the API server, should have.
func (b *Bindings) SyncTeam(ctx context.Context, t *portalv1alpha1.Team) error {
	var users portalv1alpha1.UserList
	if err := b.c.List(ctx, &users); err != nil {
		return fmt.Errorf("list Users: %w", err)
	}
	p, err := b.PlanForTeam(ctx, b.c, t.Name, t, Members(t, users.Items))
	if err != nil {
		return err
	}
	return b.Apply(ctx, p)
}

// RemoveTeam deletes every binding of the team named name.
func (b *Bindings) RemoveTeam(ctx context.Context, name string) error {
	p, err := b.PlanForTeam(ctx, b.c, name, nil, nil)
	if err != nil {
		return err
	}
	return b.Apply(ctx, p)
}
