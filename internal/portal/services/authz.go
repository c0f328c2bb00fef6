package services

import (
	"context"
	"fmt"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	portalv1alpha1 "github.com/mooringhq/mooring/api/portal/v1alpha1"
	"github.com/mooringhq/mooring/internal/portal/cluster"
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
	cs, err := a.imp.Clientset(caller.Identity)
	if err != nil {
		return false, err
	}
	review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Group: group, Resource: resource, Namespace: namespace},
	}}
	res, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
	if err != nil {
		return false, fmt.Errorf("ask whether %s may %s %s: %w", caller.Identity.UserName, verb, resource, err)
	}
	return res.Status.Allowed, nil
}

// requireOnUsers fails with KindForbidden unless the caller may verb portal users. The
// rules live in config/portal: ClusterRoles on users.portal.mooring.dev bound to the
// admin and auditor groups.
func (a *Authz) requireOnUsers(ctx context.Context, caller *Caller, verb string) error {
	ok, err := a.Can(ctx, caller, verb, portalv1alpha1.GroupVersion.Group, "users", "")
	if err != nil {
		return err
	}
	if !ok {
		return &Error{Kind: KindForbidden, Message: fmt.Sprintf("%s may not %s users", caller.User.Spec.Username, verb)}
	}
	return nil
}
