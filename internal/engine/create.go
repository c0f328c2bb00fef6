package engine

import (
	"context"
	"fmt"
	"reflect"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
)

// A missing child is created with a plain create (protobuf for built-in kinds) rather
// than a server-side apply: the API server decodes, merges and records it for much less,
// and a create that fails with AlreadyExists is the only case where an object of that
// name might not be Mooring's, so no read is needed before it.
//
// A create records Mooring's fields under an Update entry of managedFields, not an Apply
// entry; ownership.go converts it before the child's first apply.

// create creates the child described by want. It returns created=false, with no error,
// when an object of that name exists already and is Mooring's (the cache had not seen it
// yet); the caller then applies over it. An object of that name Mooring does not control
// is an error.
func (s *Scope[T]) create(ctx context.Context, gvk schema.GroupVersionKind, desired client.Object, want map[string]any) (created bool, err error) {
	live, err := s.scheme.New(gvk)
	if err != nil {
		return false, err
	}
	obj := live.(client.Object)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(want, obj); err != nil {
		return false, fmt.Errorf("convert %s %s: %w", gvk.Kind, desired.GetName(), err)
	}
	annotations := obj.GetAnnotations()
	annotations[mooringv1.FieldOwnershipAnnotation] = fieldOwnershipCreated
	obj.SetAnnotations(annotations)
	s.writes.expectCreate(gvk, obj)
	err = s.Client.Create(ctx, obj, client.FieldOwner(FieldOwner))
	if err != nil {
		s.writes.forget(gvk, obj)
	}
	if apierrors.IsAlreadyExists(err) {
		return false, s.checkNotForeign(ctx, desired, gvk)
	}
	if err != nil {
		return false, fmt.Errorf("create %s %s: %w", gvk.Kind, desired.GetName(), err)
	}
	// desired becomes the live child, as after an apply.
	reflect.ValueOf(desired).Elem().Set(reflect.ValueOf(obj).Elem())
	s.trust.remember(obj, annotations[mooringv1.SpecHashAnnotation])
	s.written(gvk, desired, changeCreated)
	return true, nil
}

// checkNotForeign reads the object's metadata past the cache and fails when an object of
// that name exists but is not controlled by the reconciled object.
func (s *Scope[T]) checkNotForeign(ctx context.Context, obj client.Object, gvk schema.GroupVersionKind) error {
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(gvk)
	err := s.reader.Get(ctx, client.ObjectKeyFromObject(obj), meta)
	if err != nil {
		return fmt.Errorf("get %s %s: %w", gvk.Kind, obj.GetName(), err)
	}
	if !metav1.IsControlledBy(meta, s.Object) {
		return fmt.Errorf("%s %s already exists and is not controlled by this %s; rename or delete it",
			gvk.Kind, obj.GetName(), s.Object.GetObjectKind().GroupVersionKind().Kind)
	}
	return nil
}

func jsonPointerEscape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
