package engine

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
)

// OwnerIndex is a cache index of Mooring's children (and their pods) by the object they
// belong to. Listing one object's children by label selector makes the cache test every
// object of the kind in the namespace, so a reconcile would cost more the more objects
// share its namespace; by the index, it costs the same at any size.
const OwnerIndex = "mooring.dev/owner"

func ownerIndexValue(component, instance string) string { return component + "/" + instance }

// IndexChildren registers OwnerIndex for the given child types on the manager's cache;
// internal/manager does it for every type Mooring caches by its managed-by label.
//
// The index is added to each informer directly rather than with the cache's IndexField,
// under the name and with the keys IndexField would use (controller-runtime's
// FieldIndexName and KeyToNamespacedKey), so a List with ChildrenOf finds it. IndexField
// also keys every object a second time for cluster-wide lists, in a set of its own;
// ChildrenOf is used only within a namespace, and that second key was a fifth of a
// trimmed child's heap (docs/performance.md).
func IndexChildren(ctx context.Context, informers cache.Informers, objs ...client.Object) error {
	for _, o := range objs {
		inf, err := informers.GetInformer(ctx, o)
		if err != nil {
			return fmt.Errorf("informer of %T: %w", o, err)
		}
		err = inf.AddIndexers(toolscache.Indexers{"field:" + OwnerIndex: func(raw any) ([]string, error) {
			obj, ok := raw.(client.Object)
			if !ok {
				return nil, fmt.Errorf("object of type %T is not an Object", raw)
			}
			l := obj.GetLabels()
			if l[mooringv1.ManagedByLabel] != mooringv1.ManagedBy || l[mooringv1.InstanceLabel] == "" || obj.GetNamespace() == "" {
				return nil, nil
			}
			return []string{obj.GetNamespace() + "/" + ownerIndexValue(l[mooringv1.ComponentLabel], l[mooringv1.InstanceLabel])}, nil
		}})
		if err != nil {
			return fmt.Errorf("index %T by owner: %w", o, err)
		}
	}
	return nil
}

// ChildrenOf selects, in a List from the manager's cache within one namespace
// (client.InNamespace), what carries the labels of the object name of the kind
// component: its children, or its pods. A List across namespaces finds nothing by it.
func ChildrenOf(component, name string) client.ListOption {
	return client.MatchingFields{OwnerIndex: ownerIndexValue(component, name)}
}

// EnqueueByIndex maps an object to the objects, of the kind newList lists, in its
// namespace whose field index names it: a Secret to the DatabaseClusters using it, a
// DatabaseCluster or a volume to the Backups of it. Reading through an index, the mapping
// costs the same however many objects share the namespace.
func EnqueueByIndex(c client.Reader, newList func() client.ObjectList, field string) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		list := newList()
		if err := c.List(ctx, list, client.InNamespace(o.GetNamespace()), client.MatchingFields{field: o.GetName()}); err != nil {
			// A cache list fails only when the index is missing: a programming error.
			logf.FromContext(ctx).Error(err, "List by index", "field", field, "value", o.GetName())
			return nil
		}
		var reqs []reconcile.Request
		_ = meta.EachListItem(list, func(item runtime.Object) error {
			if obj, ok := item.(client.Object); ok {
				reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(obj)})
			}
			return nil
		})
		return reqs
	})
}
