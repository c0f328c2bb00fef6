package database

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mooringhq/mooring/api/v1beta1"
	"github.com/mooringhq/mooring/internal/engine"
)

// growStorage handles a grown spec.storage.size. A StatefulSet's volumeClaimTemplates
// cannot change, so, as `kubectl` users do by hand: expand every existing PVC, then delete
// the StatefulSet with orphan propagation (pods and PVCs keep running) so the next
// reconcile creates it again with the new template and adopts the same pods. It returns
// true while the StatefulSet is being re-created and must not be applied.
func growStorage(ctx context.Context, s *engine.Scope[*v1beta1.DatabaseCluster], want resource.Quantity) (bool, error) {
	db := s.Object
	live := &appsv1.StatefulSet{}
	if err := s.Client.Get(ctx, client.ObjectKeyFromObject(db), live); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	if live.DeletionTimestamp != nil {
		return true, nil // re-creation under way: wait for the delete event
	}
	if len(live.Spec.VolumeClaimTemplates) == 0 || !metav1.IsControlledBy(live, db) {
		return false, nil
	}
	have := live.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage]
	if want.Cmp(have) <= 0 {
		return false, nil
	}
	pvcs, err := dataClaims(ctx, s)
	if err != nil {
		return false, err
	}
	for i := range pvcs {
		pvc := &pvcs[i]
		if cur := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; cur.Cmp(want) >= 0 {
			continue
		}
		patch := client.MergeFrom(pvc.DeepCopy())
		pvc.Spec.Resources.Requests[corev1.ResourceStorage] = want
		if err := s.Client.Patch(ctx, pvc, patch); err != nil {
			return false, fmt.Errorf("expand PVC %s to %s: %w", pvc.Name, want.String(), err)
		}
	}
	err = s.Client.Delete(ctx, live, client.PropagationPolicy(metav1.DeletePropagationOrphan),
		client.Preconditions{UID: &live.UID})
	if err != nil && !apierrors.IsNotFound(err) {
		return false, fmt.Errorf("re-create StatefulSet %s for the new volume size: %w", live.Name, err)
	}
	msg := fmt.Sprintf("Growing data volumes from %s to %s: %d PVCs expanded, StatefulSet re-created with its pods kept.",
		have.String(), want.String(), len(pvcs))
	s.Event(corev1.EventTypeNormal, ReasonResizing, "Resize", msg)
	engine.SetCondition(db, ConditionStorageResized, metav1.ConditionFalse, ReasonResizing, msg)
	return true, nil
}

// dataClaims lists the cluster's data PVCs from the cache (they carry Mooring's labels).
func dataClaims(ctx context.Context, s *engine.Scope[*v1beta1.DatabaseCluster]) ([]corev1.PersistentVolumeClaim, error) {
	list := &corev1.PersistentVolumeClaimList{}
	err := s.Client.List(ctx, list, client.InNamespace(s.Object.Namespace),
		client.MatchingLabels(engine.Labels(Component, s.Object.Name)))
	if err != nil {
		return nil, fmt.Errorf("list data PVCs: %w", err)
	}
	return list.Items, nil
}

// storageStatus reports whether every bound data volume has reached the requested size.
// A claim not bound yet (a new replica's, or any while the provisioner works) has no
// capacity to compare: it says nothing about resizing, and counting it would tell the
// user of a new database that its storage class must allow volume expansion.
func storageStatus(ctx context.Context, s *engine.Scope[*v1beta1.DatabaseCluster], want resource.Quantity) error {
	db := s.Object
	pvcs, err := dataClaims(ctx, s)
	if err != nil {
		return err
	}
	bound, waiting := 0, 0
	for _, pvc := range pvcs {
		if pvc.Status.Phase != corev1.ClaimBound {
			continue
		}
		bound++
		if capacity, ok := pvc.Status.Capacity[corev1.ResourceStorage]; !ok || capacity.Cmp(want) < 0 {
			waiting++
		}
	}
	switch {
	case bound == 0:
		// Nothing bound yet: nothing to report about resizing.
	case waiting > 0:
		engine.SetCondition(db, ConditionStorageResized, metav1.ConditionFalse, ReasonExpanding, fmt.Sprintf(
			"%d of %d data volumes are not yet %s; the storage class must allow volume expansion.", waiting, bound, want.String()))
	default:
		engine.SetCondition(db, ConditionStorageResized, metav1.ConditionTrue, ReasonResized,
			fmt.Sprintf("All %d data volumes have %s.", bound, want.String()))
		db.Status.StorageSize = &want
	}
	return nil
}
