package controller

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	portalv1alpha1 "github.com/mooringhq/mooring/api/portal/v1alpha1"
	"github.com/mooringhq/mooring/internal/portal/services"
)

// grantedNamespaceIndex indexes Users in the manager's cache by the namespaces their
// role grants them, so a namespace maps to the Users waiting for it without listing all.
const grantedNamespaceIndex = "portal.mooring.dev/granted-namespace"

// grantedNamespaces is the index function of grantedNamespaceIndex: the namespaces a
// User gets RoleBindings in, as services.Bindings.Desired binds them.
func grantedNamespaces(o client.Object) []string {
	u, ok := o.(*portalv1alpha1.User)
	if !ok {
		return nil
	}
	return services.RoleBindingNamespaces(u)
}

// namespaceArrived passes the Namespace events after which a binding that could not be
// created may now be: a namespace created, or one seen with a new UID (deleted and
// created again while the watch was down, so the informer reports an update). Deletion
// needs nothing: the namespace's own bindings go with it and their delete events
// already reconcile the user (whose create, refused while the namespace terminates, is
// retried with back-off and then every 2 minutes once it is gone), and label or status
// changes grant nothing.
var namespaceArrived = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return true },
	UpdateFunc:  func(e event.UpdateEvent) bool { return e.ObjectOld.GetUID() != e.ObjectNew.GetUID() },
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
}

// usersOfNamespace maps a Namespace to the users whose grants name it, read from the
// cache through grantedNamespaceIndex.
func (r *BindingsReconciler) usersOfNamespace(ctx context.Context, ns client.Object) []reconcile.Request {
	var l portalv1alpha1.UserList
	if err := r.Cache.List(ctx, &l, client.MatchingFields{grantedNamespaceIndex: ns.GetName()}); err != nil {
		// A cache list fails only when the index is missing; the retry still comes.
		logf.FromContext(ctx).Error(err, "List the Users granted a namespace", "namespace", ns.GetName())
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(l.Items))
	for i := range l.Items {
		reqs = append(reqs, byUserID(ctx, &l.Items[i])...)
	}
	return reqs
}
