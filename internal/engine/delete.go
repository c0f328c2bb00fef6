package engine

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// DeleteExact deletes obj as it was read (a UID precondition, when obj has a UID), with
// its dependents in the background unless propagation says otherwise (Orphan keeps a
// StatefulSet's pods while it is re-created; Foreground lets a Job go only once its pod
// has). An object already being deleted, gone, or replaced by another of the same name is
// not an error. It is for what Delete's ownership check cannot apply to: what a reconcile
// made without an owner reference (a finalizer's Job, a Backup's volume), or a child
// whose deletion needs a propagation of its own.
func (s *Scope[T]) DeleteExact(ctx context.Context, obj client.Object, propagation metav1.DeletionPropagation, opts ...WriteOption) error {
	if obj.GetDeletionTimestamp() != nil {
		return nil
	}
	gvk, err := apiutil.GVKForObject(obj, s.scheme)
	if err != nil {
		return err
	}
	if propagation == "" {
		propagation = metav1.DeletePropagationBackground
	}
	options := []client.DeleteOption{client.PropagationPolicy(propagation)}
	if uid := obj.GetUID(); uid != "" {
		options = append(options, client.Preconditions{UID: &uid})
	}
	err = s.Client.Delete(ctx, obj, options...)
	switch {
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		return nil
	case err != nil:
		return fmt.Errorf("delete %s %s: %w", gvk.Kind, obj.GetName(), err)
	}
	s.wrote(gvk, obj, changeDeleted, writeOptionsOf(opts))
	return nil
}
