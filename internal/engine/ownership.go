package engine

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/util/csaupgrade"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
)

// A create records Mooring's fields under an Update entry of managedFields, not an Apply
// entry. Server-side apply prunes only fields its own Apply entry owned, so a field later
// dropped from the desired object would stay. A created child therefore carries
// mooringv1.FieldOwnershipAnnotation until its first apply, which converts the Update entry into
// Mooring's Apply entry first (upgradeOwnership). A child that never changes never pays
// for that; one that does pays one request, or two when the fast path misses.

// renameCreateEntry is the JSON patch of the fast path. The API server keeps managedFields
// sorted by operation (Apply before Update), then by time, then by manager, so right
// after a create the entry the create left is the first one, and it stays first until
// somebody applies to the child or writes it in the same second. The patch tests exactly
// that (first entry: manager mooring, operation Update), renames the operation to Apply,
// which is what csaupgrade produces from a single Update entry, and drops the
// annotation. The tests make it atomic: if anything else is first, or the annotation is
// gone, the whole patch fails with 422 and nothing is changed.
var renameCreateEntry = mustJSON([]map[string]any{
	{"op": "test", "path": "/metadata/managedFields/0/manager", "value": FieldOwner},
	{"op": "test", "path": "/metadata/managedFields/0/operation", "value": string(metav1.ManagedFieldsOperationUpdate)},
	{"op": "replace", "path": "/metadata/managedFields/0/operation", "value": string(metav1.ManagedFieldsOperationApply)},
	{"op": "remove", "path": "/metadata/annotations/" + jsonPointerEscape(mooringv1.FieldOwnershipAnnotation)},
})

// upgradeOwnership turns the Update entry a create left in the child's managedFields into
// Mooring's Apply entry and drops mooringv1.FieldOwnershipAnnotation, so that the apply that follows
// prunes what Mooring no longer sets. The cache drops managedFields, so it first tries
// renameCreateEntry, which needs no read; when that misses it reads the child's
// managedFields past the cache and patches them with csaupgrade under an optimistic lock.
func (s *Scope[T]) upgradeOwnership(ctx context.Context, gvk schema.GroupVersionKind, key client.ObjectKey) error {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(gvk)
	m.SetName(key.Name)
	m.SetNamespace(key.Namespace)
	err := s.patchOwnership(ctx, gvk, m, renameCreateEntry)
	switch {
	case err == nil:
		ownershipConversions.WithLabelValues(gvk.Kind, conversionRenamed).Inc()
		return nil
	case !apierrors.IsInvalid(err):
		return err
	}
	return s.upgradeOwnershipByRead(ctx, gvk, key)
}

// patchOwnership sends one JSON patch of the child m names, as an own write.
func (s *Scope[T]) patchOwnership(ctx context.Context, gvk schema.GroupVersionKind, m *metav1.PartialObjectMetadata, patch []byte) error {
	err := s.writes.update(gvk, m, func() error {
		return s.Client.Patch(ctx, m, client.RawPatch(types.JSONPatchType, patch), client.FieldOwner(FieldOwner))
	})
	if err != nil {
		return fmt.Errorf("take over field owners of %s %s: %w", gvk.Kind, m.GetName(), err)
	}
	return nil
}

// upgradeOwnershipByRead is upgradeOwnership's general path: any order of entries, any
// number of Mooring's Update entries.
func (s *Scope[T]) upgradeOwnershipByRead(ctx context.Context, gvk schema.GroupVersionKind, key client.ObjectKey) error {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(gvk)
	if err := s.reader.Get(ctx, key, m); err != nil {
		return fmt.Errorf("read field owners of %s %s: %w", gvk.Kind, key.Name, err)
	}
	if _, ok := m.GetAnnotations()[mooringv1.FieldOwnershipAnnotation]; !ok {
		return nil
	}
	upgrade, err := csaupgrade.UpgradeManagedFieldsPatch(m, sets.New(FieldOwner), FieldOwner)
	if err != nil {
		return fmt.Errorf("field owners of %s %s: %w", gvk.Kind, key.Name, err)
	}
	ops := []map[string]any{}
	if upgrade != nil {
		if err := json.Unmarshal(upgrade, &ops); err != nil {
			return err
		}
	}
	ops = append(ops, map[string]any{"op": "remove", "path": "/metadata/annotations/" + jsonPointerEscape(mooringv1.FieldOwnershipAnnotation)})
	patch, err := json.Marshal(ops)
	if err != nil {
		return err
	}
	if err := s.patchOwnership(ctx, gvk, m, patch); err != nil {
		return err
	}
	ownershipConversions.WithLabelValues(gvk.Kind, conversionRead).Inc()
	return nil
}

// Values of ownershipConversions' "path" label.
const (
	conversionRenamed = "renamed"
	conversionRead    = "read"
)

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
