package engine

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// Patch sends patch for obj under Mooring's field owner: a merge or strategic-merge patch
// of the fields a reconcile changes in an object it does not apply whole (a volume's
// size, a pod's label, a StatefulSet's retention policy while its owner is deleted). On
// return obj holds what the API server returned. The error is the API server's, not
// wrapped, for the caller to tell a refusal (Forbidden, Invalid) or NotFound from a
// failure.
func (s *Scope[T]) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...WriteOption) error {
	gvk, err := apiutil.GVKForObject(obj, s.scheme)
	if err != nil {
		return err
	}
	err = s.writes.update(gvk, obj, func() error {
		return s.Client.Patch(ctx, obj, patch, client.FieldOwner(FieldOwner))
	})
	if err != nil {
		return err
	}
	s.wrote(gvk, obj, changeUpdated, writeOptionsOf(opts))
	return nil
}
