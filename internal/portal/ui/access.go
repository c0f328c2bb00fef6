package ui

import (
	"context"
	"fmt"
	"slices"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	portalv1alpha1 "github.com/mooringhq/mooring/api/portal/v1alpha1"
	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/internal/portal/cluster"
	"github.com/mooringhq/mooring/internal/portal/services"
)

// Access is what RBAC lets a caller do in one namespace: the resource rules of a
// SelfSubjectRulesReview (which include the caller's cluster-wide rules).
type Access struct {
	Rules []authorizationv1.ResourceRule
}

func has(list []string, v string) bool { return slices.Contains(list, v) || slices.Contains(list, "*") }

// Can reports whether verb on every object of resource in group is allowed. Rules
// limited to some resourceNames do not count: a button must work for any object.
func (a Access) Can(verb, group, resource string) bool {
	for _, r := range a.Rules {
		if len(r.ResourceNames) == 0 && has(r.Verbs, verb) && has(r.APIGroups, group) && has(r.Resources, resource) {
			return true
		}
	}
	return false
}

// CanMooring is Can for a Mooring kind by its path segment (apps, backups, ...).
func (a Access) CanMooring(verb, resource string) bool {
	return a.Can(verb, mooringv1.GroupVersion.Group, resource)
}

// CanUsers is Can for portal users.
func (a Access) CanUsers(verb string) bool {
	return a.Can(verb, portalv1alpha1.GroupVersion.Group, "users")
}

// CanTeams is Can for portal teams.
func (a Access) CanTeams(verb string) bool {
	return a.Can(verb, portalv1alpha1.GroupVersion.Group, "teams")
}

// RulesReview asks the API server, as the caller, what the caller may do.
type RulesReview struct {
	Imp *cluster.Impersonator
}

// Access implements Permissions with one SelfSubjectRulesReview made as the caller.
func (r RulesReview) Access(ctx context.Context, caller *services.Caller, namespace string) (Access, error) {
	cs, err := r.Imp.Clientset(caller.Identity)
	if err != nil {
		return Access{}, err
	}
	review := &authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: namespace}}
	res, err := cs.AuthorizationV1().SelfSubjectRulesReviews().Create(ctx, review, metav1.CreateOptions{})
	if err != nil {
		return Access{}, fmt.Errorf("ask what %s may do in %s: %w", caller.Identity.UserName, namespace, err)
	}
	return Access{Rules: res.Status.ResourceRules}, nil
}
