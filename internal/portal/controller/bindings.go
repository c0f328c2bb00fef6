package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	portalv1alpha1 "github.com/mooringhq/mooring/api/portal/v1alpha1"
	"github.com/mooringhq/mooring/internal/portal/services"
)

// missingNamespaceRetry is how soon a developer's binding in a namespace that does not
// exist (yet) is tried again. A namespace's creation already reconciles the users it
// was granted to (see namespaceArrived); this is the safety net should that event be
// lost.
const missingNamespaceRetry = 2 * time.Minute

// BindingsReconciler reconciles one user, keyed by the user's id (the label every
// binding carries), so that bindings whose User is gone still map to a request.
type BindingsReconciler struct {
	// Cache reads Users and the labelled bindings from the manager's cache; Live reads
	// them from the API server, only once the cache shows something to change.
	Cache, Live client.Reader
	Bindings    *services.Bindings
}

// Reconcile brings the bindings of the user with id req.Name in step. It writes
// nothing when the cache shows them in step; otherwise it decides again on what the
// API server says now, so a stale cache never undoes a change the API just made.
func (r *BindingsReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	id := req.Name
	p, err := r.plan(ctx, r.Cache, id)
	if err != nil || p.Empty() {
		return reconcile.Result{}, err
	}
	if p, err = r.plan(ctx, r.Live, id); err != nil || p.Empty() {
		return reconcile.Result{}, err
	}
	err = r.Bindings.Apply(ctx, p)
	var missing *services.MissingNamespaceError
	if errors.As(err, &missing) {
		logf.FromContext(ctx).Info("Some namespaces of the user do not exist; trying again later", "user", id, "namespaces", missing.Namespaces)
		return reconcile.Result{RequeueAfter: missingNamespaceRetry}, nil
	}
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("bring the bindings of user %s in step: %w", id, err)
	}
	logf.FromContext(ctx).Info("Brought bindings in step", "user", id, "created", len(p.Create), "deleted", len(p.Delete))
	return reconcile.Result{}, nil
}

func (r *BindingsReconciler) plan(ctx context.Context, rd client.Reader, id string) (services.Plan, error) {
	u, err := userByID(ctx, rd, id)
	if err != nil {
		return services.Plan{}, err
	}
	return r.Bindings.PlanFor(ctx, rd, id, u)
}

// userByID returns the User with id, or nil when there is none.
func userByID(ctx context.Context, rd client.Reader, id string) (*portalv1alpha1.User, error) {
	var l portalv1alpha1.UserList
	if err := rd.List(ctx, &l, client.MatchingLabels{portalv1alpha1.IDLabel: id}); err != nil {
		return nil, fmt.Errorf("find User %s: %w", id, err)
	}
	for i := range l.Items {
		if l.Items[i].Spec.ID == id && l.Items[i].DeletionTimestamp.IsZero() {
			return &l.Items[i], nil
		}
	}
	return nil, nil
}

// byUserID maps a User or a binding to the request of its user id.
func byUserID(_ context.Context, o client.Object) []reconcile.Request {
	id := o.GetLabels()[portalv1alpha1.IDLabel]
	if u, ok := o.(*portalv1alpha1.User); ok && u.Spec.ID != "" {
		id = u.Spec.ID
	}
	if id == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: id}}}
}

// SetupWithManager registers the reconciler: Users, the bindings the manager's cache
// holds (only those labelled with a user id, see NewManager), and the metadata of
// Namespaces, so a namespace created after it was granted gets its bindings at once.
func (r *BindingsReconciler) SetupWithManager(mgr manager.Manager) error {
	// The context only bounds getting the informer, which does not wait before Start.
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &portalv1alpha1.User{}, grantedNamespaceIndex, grantedNamespaces); err != nil {
		return fmt.Errorf("index Users by granted namespace: %w", err)
	}
	h := handler.EnqueueRequestsFromMapFunc(byUserID)
	return builder.ControllerManagedBy(mgr).
		Named("portal-bindings").
		Watches(&portalv1alpha1.User{}, h).
		Watches(&rbacv1.RoleBinding{}, h).
		Watches(&rbacv1.ClusterRoleBinding{}, h).
		WatchesMetadata(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.usersOfNamespace),
			builder.WithPredicates(namespaceArrived)).
		Complete(r)
}
