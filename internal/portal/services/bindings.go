package services

import (
	"context"
	"fmt"
	"log/slog"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	portalv1alpha1 "github.com/mooringhq/mooring/api/portal/v1alpha1"
	"github.com/mooringhq/mooring/internal/portal/cluster"
	"github.com/mooringhq/mooring/internal/portal/models"
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
	// protected namespaces never get a user's RoleBinding, whatever the User says (it
	// may have been edited with kubectl, or granted before the namespace was protected).
	protected Protected
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

// Protecting returns b, which from now on binds nobody in the namespaces p protects.
func (b *Bindings) Protecting(p Protected) *Bindings {
	b.protected = p
	return b
}

// RoleBindingNamespaces returns the namespaces u gets a RoleBinding in: a developer's
// namespaces. Admins and auditors are bound cluster-wide, so any namespaces they list
// grant nothing.
func RoleBindingNamespaces(u *portalv1alpha1.User) []string {
	if u.Spec.Role != portalv1alpha1.RoleDeveloper {
		return nil
	}
	return u.Spec.Namespaces
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
		for _, ns := range RoleBindingNamespaces(u) {
			if b.protected.Why(ns) != "" {
				continue
			}
			rbs = append(rbs, rbacv1.RoleBinding{ObjectMeta: b.meta(u, ns), RoleRef: ref, Subjects: b.subject(u)})
		}
		return nil, rbs
	}
	return nil, nil
}

// Grant is one binding of a ClusterRole: cluster-wide (Namespace "") or in a namespace.
type Grant struct{ ClusterRole, Namespace string }

// grants returns the ClusterRoles u's bindings grant, and where.
func (b *Bindings) grants(u *portalv1alpha1.User) []Grant {
	crbs, rbs := b.Desired(u)
	var gs []Grant
	for _, crb := range crbs {
		gs = append(gs, Grant{ClusterRole: crb.RoleRef.Name})
	}
	for _, rb := range rbs {
		gs = append(gs, Grant{ClusterRole: rb.RoleRef.Name, Namespace: rb.Namespace})
	}
	return gs
}

// NewGrants returns what u's bindings grant that before's did not (nil before: none):
// the grants a change from before to u makes, which whoever makes it must be allowed to
// bind. Taking a role away grants nothing.
func (b *Bindings) NewGrants(before, u *portalv1alpha1.User) []Grant {
	var had []Grant
	if before != nil {
		had = b.grants(before)
	}
	var gs []Grant
	for _, g := range b.grants(u) {
		if !slices.Contains(had, g) {
			gs = append(gs, g)
		}
	}
	return gs
}

// Plan is what it takes to bring one holder's bindings in step: bindings to create,
// to update (their subjects: a team's members changed; roleRef cannot change in place)
// and to delete. An empty Plan means they are in step.
type Plan struct {
	Create, Update, Delete []client.Object
}

// Empty reports whether nothing needs to change.
func (p Plan) Empty() bool { return len(p.Create) == 0 && len(p.Update) == 0 && len(p.Delete) == 0 }

// holder is whoever a set of bindings is kept for, found by one label: a user (its id
// under IDLabel, bound cluster-wide or in namespaces) or a team (its name under
// TeamLabel, bound in namespaces only).
type holder struct {
	label, value string
	// namespacedOnly holders have no ClusterRoleBindings to look for.
	namespacedOnly bool
}

// PlanFor compares the bindings labelled with the user id id, read from r, with what
// u should have (nothing when u is nil: the user is gone). A binding is kept only when
// it is exactly a desired one (name, namespace, role and subjects), so one added by hand
// under the user's label, or with another role, goes; one whose subjects were edited
// gets the desired subjects back.
func (b *Bindings) PlanFor(ctx context.Context, r client.Reader, id string, u *portalv1alpha1.User) (Plan, error) {
	var want []client.Object
	if u != nil {
		crbs, rbs := b.Desired(u)
		for i := range crbs {
			want = append(want, &crbs[i])
		}
		for i := range rbs {
			want = append(want, &rbs[i])
		}
	}
	return b.plan(ctx, r, holder{label: portalv1alpha1.IDLabel, value: id}, want)
}

// plan compares the bindings of h, read from r, with want.
func (b *Bindings) plan(ctx context.Context, r client.Reader, h holder, want []client.Object) (Plan, error) {
	sel := client.MatchingLabels{h.label: h.value}
	var have []client.Object
	if !h.namespacedOnly {
		var crbs rbacv1.ClusterRoleBindingList
		if err := r.List(ctx, &crbs, sel); err != nil {
			return Plan{}, fmt.Errorf("list ClusterRoleBindings labelled %s=%s: %w", h.label, h.value, err)
		}
		for i := range crbs.Items {
			have = append(have, &crbs.Items[i])
		}
	}
	var rbs rbacv1.RoleBindingList
	if err := r.List(ctx, &rbs, sel); err != nil {
		return Plan{}, fmt.Errorf("list RoleBindings labelled %s=%s: %w", h.label, h.value, err)
	}
	for i := range rbs.Items {
		have = append(have, &rbs.Items[i])
	}
	return planBindings(have, want), nil
}

// planBindings compares the bindings there are with those wanted: pure, for tests.
func planBindings(have, want []client.Object) Plan {
	wanted := make(map[string]client.Object, len(want))
	for _, w := range want {
		wanted[bindingKey(w)] = w
	}
	kept := map[string]bool{}
	var p Plan
	for _, cur := range have {
		ref, subjects := roleRefAndSubjects(cur)
		w, ok := wanted[bindingKey(cur)]
		if !ok {
			p.Delete = append(p.Delete, cur)
			continue
		}
		wref, wsub := roleRefAndSubjects(w)
		switch {
		case ref != wref: // immutable: the binding goes and the desired one is created
			p.Delete = append(p.Delete, cur)
			continue
		case !equality.Semantic.DeepEqual(subjects, wsub):
			p.Update = append(p.Update, withSubjects(cur, wsub))
		}
		kept[bindingKey(cur)] = true
	}
	for _, w := range want {
		if !kept[bindingKey(w)] {
			p.Create = append(p.Create, w)
		}
	}
	return p
}

// withSubjects returns a copy of the binding o with subjects s, for an update.
func withSubjects(o client.Object, s []rbacv1.Subject) client.Object {
	switch b := o.(type) {
	case *rbacv1.ClusterRoleBinding:
		c := b.DeepCopy()
		c.Subjects = s
		return c
	case *rbacv1.RoleBinding:
		c := b.DeepCopy()
		c.Subjects = s
		return c
	}
	return o
}

func bindingKey(o client.Object) string {
	return fmt.Sprintf("%T/%s/%s", o, o.GetNamespace(), o.GetName())
}

func roleRefAndSubjects(o client.Object) (rbacv1.RoleRef, []rbacv1.Subject) {
	switch b := o.(type) {
	case *rbacv1.ClusterRoleBinding:
		return b.RoleRef, b.Subjects
	case *rbacv1.RoleBinding:
		return b.RoleRef, b.Subjects
	}
	return rbacv1.RoleRef{}, nil
}

// Apply deletes, updates and creates what p says. Bindings already gone or already
// there are fine (another replica or the reconciler was first); an update that lost a
// race fails, and the reconciler, which the change woke, decides again. A RoleBinding whose namespace
// does not exist is reported as a *MissingNamespaceError after the rest is applied.
func (b *Bindings) Apply(ctx context.Context, p Plan) error {
	for _, o := range p.Delete {
		if err := b.delete(ctx, o); err != nil {
			return err
		}
	}
	for _, o := range p.Update {
		if err := b.c.Update(ctx, o); err != nil {
			return fmt.Errorf("update binding %s: %w", client.ObjectKeyFromObject(o), err)
		}
		slog.InfoContext(ctx, "Updated binding subjects", "binding", client.ObjectKeyFromObject(o).String())
	}
	var missing []string
	for _, o := range p.Create {
		err := b.create(ctx, o)
		if apierrors.IsNotFound(err) && o.GetNamespace() != "" {
			missing = append(missing, o.GetNamespace())
			continue
		}
		if err != nil {
			return err
		}
	}
	if missing != nil {
		return &MissingNamespaceError{Namespaces: missing}
	}
	return nil
}

// MissingNamespaceError names the namespaces of a developer or a team that do not exist.
type MissingNamespaceError struct{ Namespaces []string }

func (e *MissingNamespaceError) Error() string {
	return fmt.Sprintf("namespaces %v do not exist", e.Namespaces)
}

// Sync makes the cluster's bindings of u exactly Desired(u), reading them straight
// from the API server: it creates what is missing, deletes what is no longer wanted,
// and writes nothing when all is in step.
func (b *Bindings) Sync(ctx context.Context, u *portalv1alpha1.User) error {
	p, err := b.PlanFor(ctx, b.c, u.Spec.ID, u)
	if err != nil {
		return err
	}
	return b.Apply(ctx, p)
}

// CheckNamespaces refuses a developer's namespaces that do not exist, by a dry run of
// the RoleBindings the portal would create in them (no extra permission needed).
func (b *Bindings) CheckNamespaces(ctx context.Context, u *portalv1alpha1.User) error {
	_, rbs := b.Desired(u)
	return b.checkNamespaces(ctx, rbs, func(string) string { return "namespaces" })
}

// checkNamespaces dry-runs rbs and refuses those whose namespace does not exist, with
// the field fieldOf names for the namespace.
func (b *Bindings) checkNamespaces(ctx context.Context, rbs []rbacv1.RoleBinding, fieldOf func(ns string) string) error {
	var bad []models.FieldError
	for i := range rbs {
		err := b.c.Create(ctx, &rbs[i], client.DryRunAll)
		switch {
		case err == nil, apierrors.IsAlreadyExists(err):
		case apierrors.IsNotFound(err):
			bad = append(bad, field(fieldOf(rbs[i].Namespace), "namespace %q does not exist", rbs[i].Namespace))
		default:
			return fmt.Errorf("check namespace %s: %w", rbs[i].Namespace, err)
		}
	}
	if bad != nil {
		return invalid(bad...)
	}
	return nil
}

// Remove deletes every binding of u.
func (b *Bindings) Remove(ctx context.Context, u *portalv1alpha1.User) error {
	p, err := b.PlanFor(ctx, b.c, u.Spec.ID, nil)
	if err != nil {
		return err
	}
	return b.Apply(ctx, p)
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
