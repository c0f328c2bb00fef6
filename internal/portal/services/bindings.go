package services

import (
	"context"
	"fmt"
	"log/slog"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	portalv1alpha1 "github.com/mooringhq/mooring/api/portal/v1alpha1"
	"github.com/mooringhq/mooring/internal/portal/cluster"
	"github.com/mooringhq/mooring/internal/portal/store"
)

// RoleNames are the ClusterRoles the portal binds for each role (mooring-admin,
// mooring-developer, mooring-auditor as config/default installs them).
type RoleNames map[portalv1alpha1.Role]string

// DefaultRoleNames are the names config/default gives the user ClusterRoles.
var DefaultRoleNames = RoleNames{
	portalv1alpha1.RoleAdmin:     "mooring-admin",
	portalv1alpha1.RoleDeveloper: "mooring-developer",
	portalv1alpha1.RoleAuditor:   "mooring-auditor",
}

// Bindings keeps each user's RBAC bindings in step with the user's role: a
// ClusterRoleBinding for admins and auditors, a RoleBinding in each namespace of a
// developer, none for "none". Every binding carries the user's id label and is owned by
// the User, so it goes with the user.
type Bindings struct {
	c     client.Client
	imp   *cluster.Impersonator
	roles RoleNames
}

// NewBindings returns a Bindings writing with the portal's client c.
func NewBindings(c client.Client, imp *cluster.Impersonator, roles RoleNames) *Bindings {
	return &Bindings{c: c, imp: imp, roles: roles}
}

func bindingName(u *portalv1alpha1.User) string { return "mooring-portal-" + u.Spec.ID }

func (b *Bindings) meta(u *portalv1alpha1.User, namespace string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:      bindingName(u),
		Namespace: namespace,
		Labels: map[string]string{
			portalv1alpha1.IDLabel:   u.Spec.ID,
			"app.kubernetes.io/name": "mooring-portal",
		},
		OwnerReferences: []metav1.OwnerReference{store.OwnerRef(u)},
	}
}

func (b *Bindings) subject(u *portalv1alpha1.User) []rbacv1.Subject {
	id := b.imp.IdentityOf(u.Spec.ID, u.Spec.Role)
	return []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: id.ServiceAccount, Namespace: b.imp.Namespace()}}
}

// Desired returns the bindings u should have; pure, for tests.
func (b *Bindings) Desired(u *portalv1alpha1.User) ([]rbacv1.ClusterRoleBinding, []rbacv1.RoleBinding) {
	role := b.roles[u.Spec.Role]
	ref := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role}
	switch u.Spec.Role {
	case portalv1alpha1.RoleAdmin, portalv1alpha1.RoleAuditor:
		return []rbacv1.ClusterRoleBinding{{ObjectMeta: b.meta(u, ""), RoleRef: ref, Subjects: b.subject(u)}}, nil
	case portalv1alpha1.RoleDeveloper:
		var rbs []rbacv1.RoleBinding
		for _, ns := range u.Spec.Namespaces {
			rbs = append(rbs, rbacv1.RoleBinding{ObjectMeta: b.meta(u, ns), RoleRef: ref, Subjects: b.subject(u)})
		}
		return nil, rbs
	}
	return nil, nil
}

// Sync makes the cluster's bindings of u exactly Desired(u): it creates what is
// missing, deletes what is no longer wanted, and writes nothing when all is in step.
func (b *Bindings) Sync(ctx context.Context, u *portalv1alpha1.User) error {
	wantCRB, wantRB := b.Desired(u)
	sel := client.MatchingLabels{portalv1alpha1.IDLabel: u.Spec.ID}

	var crbs rbacv1.ClusterRoleBindingList
	if err := b.c.List(ctx, &crbs, sel); err != nil {
		return fmt.Errorf("list ClusterRoleBindings of user %s: %w", u.Name, err)
	}
	keepCRB := map[string]bool{}
	for i := range wantCRB {
		keepCRB[wantCRB[i].Name+"/"+wantCRB[i].RoleRef.Name] = true
	}
	have := map[string]bool{}
	for i := range crbs.Items {
		cur := &crbs.Items[i]
		if !keepCRB[cur.Name+"/"+cur.RoleRef.Name] {
			if err := b.delete(ctx, cur); err != nil {
				return err
			}
			continue
		}
		have[cur.Name+"/"+cur.RoleRef.Name] = true
	}
	for i := range wantCRB {
		if !have[wantCRB[i].Name+"/"+wantCRB[i].RoleRef.Name] {
			if err := b.create(ctx, &wantCRB[i]); err != nil {
				return err
			}
		}
	}

	var rbs rbacv1.RoleBindingList
	if err := b.c.List(ctx, &rbs, sel); err != nil {
		return fmt.Errorf("list RoleBindings of user %s: %w", u.Name, err)
	}
	keepRB := map[string]bool{}
	for i := range wantRB {
		keepRB[wantRB[i].Namespace+"/"+wantRB[i].RoleRef.Name] = true
	}
	have = map[string]bool{}
	for i := range rbs.Items {
		cur := &rbs.Items[i]
		if !keepRB[cur.Namespace+"/"+cur.RoleRef.Name] {
			if err := b.delete(ctx, cur); err != nil {
				return err
			}
			continue
		}
		have[cur.Namespace+"/"+cur.RoleRef.Name] = true
	}
	for i := range wantRB {
		if !have[wantRB[i].Namespace+"/"+wantRB[i].RoleRef.Name] {
			if err := b.create(ctx, &wantRB[i]); err != nil {
				if apierrors.IsNotFound(err) {
					return invalid(field("namespaces", "namespace %q does not exist", wantRB[i].Namespace))
				}
				return err
			}
		}
	}
	return nil
}

// Remove deletes every binding of u.
func (b *Bindings) Remove(ctx context.Context, u *portalv1alpha1.User) error {
	none := u.DeepCopy()
	none.Spec.Role = portalv1alpha1.RoleNone
	none.Spec.Namespaces = nil
	return b.Sync(ctx, none)
}

func (b *Bindings) create(ctx context.Context, obj client.Object) error {
	err := b.c.Create(ctx, obj)
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("create binding %s: %w", client.ObjectKeyFromObject(obj), err)
	}
	slog.InfoContext(ctx, "Created binding", "binding", client.ObjectKeyFromObject(obj).String())
	return nil
}

func (b *Bindings) delete(ctx context.Context, obj client.Object) error {
	if err := b.c.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete binding %s: %w", client.ObjectKeyFromObject(obj), err)
	}
	slog.InfoContext(ctx, "Deleted binding", "binding", client.ObjectKeyFromObject(obj).String())
	return nil
}
