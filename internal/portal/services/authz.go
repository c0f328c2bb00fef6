package services

import (
	"context"
	"fmt"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	portalv1alpha1 "github.com/mooringhq/mooring/api/portal/v1alpha1"
	"github.com/mooringhq/mooring/internal/portal/cluster"
	"github.com/mooringhq/mooring/internal/portal/models"
)

// Authz asks the API server what a user may do, as that user (a
// SelfSubjectAccessReview made through impersonation): the portal has no rules of its own.
type Authz struct {
	imp *cluster.Impersonator
}

// NewAuthz returns an Authz acting through imp.
func NewAuthz(imp *cluster.Impersonator) *Authz { return &Authz{imp: imp} }

// Can reports whether caller may verb the resource of group in namespace ("" for
// cluster-wide).
func (a *Authz) Can(ctx context.Context, caller *Caller, verb, group, resource, namespace string) (bool, error) {
	return a.review(ctx, caller, authorizationv1.ResourceAttributes{Verb: verb, Group: group, Resource: resource, Namespace: namespace})
}

func (a *Authz) review(ctx context.Context, caller *Caller, attrs authorizationv1.ResourceAttributes) (bool, error) {
	cs, err := a.imp.Clientset(caller.Identity)
	if err != nil {
		return false, err
	}
	review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &attrs}}
	res, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
	if err != nil {
		what := attrs.Resource
		if attrs.Name != "" {
			what += " " + attrs.Name
		}
		return false, fmt.Errorf("ask whether %s may %s %s: %w", caller.Identity.UserName, attrs.Verb, what, err)
	}
	return res.Status.Allowed, nil
}

// requireGrants fails with KindForbidden unless the caller may bind each ClusterRole
// of grants where it is to be bound: the rule the API server applies to anyone who
// creates a binding (hold the role's permissions or have bind on it). The portal creates
// bindings with its own ServiceAccount, so without this check anyone who may update
// users could hand out roles, admin included, that they could not bind themselves.
func (a *Authz) requireGrants(ctx context.Context, caller *Caller, role portalv1alpha1.Role, grants []Grant) error {
	for _, g := range grants {
		ok, err := a.review(ctx, caller, authorizationv1.ResourceAttributes{
			Verb: "bind", Group: rbacv1.GroupName, Resource: "clusterroles", Name: g.ClusterRole, Namespace: g.Namespace,
		})
		if err != nil {
			return err
		}
		if !ok {
			where := "cluster-wide"
			if g.Namespace != "" {
				where = fmt.Sprintf("in namespace %q", g.Namespace)
			}
			return &Error{Kind: KindForbidden,
				Message: fmt.Sprintf("%s may not grant the role %s %s: that needs bind on the ClusterRole %s", caller.User.Spec.Username, role, where, g.ClusterRole),
				Fields:  []models.FieldError{field("role", "%s may not be granted by %s", role, caller.User.Spec.Username)}}
		}
	}
	return nil
}

// requireOnUsers fails with KindForbidden unless the caller may verb portal users. The
// rules live in config/portal: ClusterRoles on users.portal.mooring.dev bound to the
// admin and auditor groups.
func (a *Authz) requireOnUsers(ctx context.Context, caller *Caller, verb string) error {
	return a.requireOnPortal(ctx, caller, verb, "users")
}

// requireOnPortal fails with KindForbidden unless the caller may verb the portal kind
// resource (users, teams); see requireOnUsers.
func (a *Authz) requireOnPortal(ctx context.Context, caller *Caller, verb, resource string) error {
	ok, err := a.Can(ctx, caller, verb, portalv1alpha1.GroupVersion.Group, resource, "")
	if err != nil {
		return err
	}
	if !ok {
		return &Error{Kind: KindForbidden, Message: fmt.Sprintf("%s may not %s %s", caller.User.Spec.Username, verb, resource)}
	}
	return nil
}
