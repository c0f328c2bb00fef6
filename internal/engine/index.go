package engine

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// OwnerIndex is a cache index of Mooring's children (and their pods) by the object they
// belong to. Listing one object's children by label selector makes the cache test every
// object of the kind in the namespace, so a reconcile would cost more the more objects
// share its namespace; by the index, it costs the same at any size.
const OwnerIndex = "mooring.dev/owner"

func ownerIndexValue(component, instance string) string { return component + "/" + instance }

// IndexChildren registers OwnerIndex for the given child types on the manager's cache;
// internal/manager does it for every type Mooring caches by its managed-by label.
func IndexChildren(ctx context.Context, indexer client.FieldIndexer, objs ...client.Object) error {
	for _, o := range objs {
		err := indexer.IndexField(ctx, o, OwnerIndex, func(obj client.Object) []string {
			l := obj.GetLabels()
			if l[ManagedByLabel] != ManagedBy || l[InstanceLabel] == "" {
				return nil
			}
			return []string{ownerIndexValue(l[ComponentLabel], l[InstanceLabel])}
		})
		if err != nil {
			return fmt.Errorf("index %T by owner: %w", o, err)
		}
	}
	return nil
}

// ChildrenOf selects, in a List from the manager's cache, what carries the labels of the
// object name of the kind component: its children, or its pods.
func ChildrenOf(component, name string) client.ListOption {
	return client.MatchingFields{OwnerIndex: ownerIndexValue(component, name)}
}
