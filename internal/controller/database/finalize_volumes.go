package database

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mooringhq/mooring/api/v1beta1"
	"github.com/mooringhq/mooring/internal/engine"
)

// The data volumes of a deleted cluster go or stay by the StatefulSet's
// persistentVolumeClaimRetentionPolicy: under whenDeleted Delete the StatefulSet
// controller gives each data PVC an owner reference to the StatefulSet, and the garbage
// collector deletes the PVCs with it. Sync sets the policy from spec.deletionPolicy, but a
// policy changed from Delete to Retain (or Snapshot) is not applied while the cluster is
// paused, or when it is deleted before the next reconcile: the StatefulSet still says
// Delete and the data would go. So every cluster carries a finalizer, and before it is
// released the volumes are made safe from the live objects, whatever Sync got to do.

// retention is the StatefulSet's whenDeleted policy; unset is Retain, the API's default.
func retention(sts *appsv1.StatefulSet) appsv1.PersistentVolumeClaimRetentionPolicyType {
	if p := sts.Spec.PersistentVolumeClaimRetentionPolicy; p != nil && p.WhenDeleted != "" {
		return p.WhenDeleted
	}
	return appsv1.RetainPersistentVolumeClaimRetentionPolicyType
}

// protectVolumes makes the live objects keep the data volumes when the spec says so
// (Retain, Snapshot): the StatefulSet's whenDeleted becomes Retain, so the StatefulSet
// controller no longer gives the PVCs owner references, and the owner references it gave
// already are removed, so the garbage collector does not take the PVCs with the
// StatefulSet. changed reports a write: the caller looks again before it lets the cluster
// go, in case the StatefulSet controller acted on the old policy meanwhile. The volumes
// are read past the cache, which holds only labelled PVCs.
func (h Handler) protectVolumes(ctx context.Context, s *engine.Scope[*v1beta1.DatabaseCluster]) (changed bool, err error) {
	db := s.Object
	sts := &appsv1.StatefulSet{}
	err = s.Client.Get(ctx, client.ObjectKey{Namespace: db.Namespace, Name: db.Name}, sts)
	if client.IgnoreNotFound(err) != nil {
		return false, fmt.Errorf("get StatefulSet %s: %w", db.Name, err)
	}
	found := err == nil

	if db.Spec.DeletionPolicy == v1beta1.DeletionDelete {
		// Volumes are never deleted by Mooring itself: a StatefulSet that still keeps them
		// (the change to Delete was never applied) leaves them, and the user is told.
		if found && retention(sts) == appsv1.RetainPersistentVolumeClaimRetentionPolicyType {
			s.Event(corev1.EventTypeWarning, v1beta1.ReasonVolumesKept, "Finalize", fmt.Sprintf(
				"deletionPolicy is Delete, but StatefulSet %s still kept its volumes (the change was not applied before the deletion): "+
					"the PVCs %s-%s-* are kept; delete them by hand if the data is not wanted.", sts.Name, DataVolume, db.Name))
		}
		return false, nil
	}

	if found && retention(sts) != appsv1.RetainPersistentVolumeClaimRetentionPolicyType {
		patch := client.MergeFrom(sts.DeepCopy())
		if sts.Spec.PersistentVolumeClaimRetentionPolicy == nil {
			sts.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{}
		}
		sts.Spec.PersistentVolumeClaimRetentionPolicy.WhenDeleted = appsv1.RetainPersistentVolumeClaimRetentionPolicyType
		// One event below reports the StatefulSet and the PVCs.
		if err := s.Patch(ctx, sts, patch, engine.Silent()); client.IgnoreNotFound(err) != nil {
			return false, fmt.Errorf("set StatefulSet %s to retain its volumes: %w", sts.Name, err)
		}
		changed = true
	}

	claims := &metav1.PartialObjectMetadataList{}
	claims.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaimList"))
	var reader client.Reader = s.Client
	if h.APIReader != nil {
		reader = h.APIReader
	}
	if err := reader.List(ctx, claims, client.InNamespace(db.Namespace)); err != nil {
		return false, fmt.Errorf("list PVCs: %w", err)
	}
	var released []string
	for i := range claims.Items {
		pvc := &claims.Items[i]
		if !isDataClaim(db, pvc.Name) {
			continue
		}
		keep := withoutStatefulSetOwner(pvc.OwnerReferences, db.Name)
		if len(keep) == len(pvc.OwnerReferences) {
			continue
		}
		// The optimistic lock makes the new list of owners replace exactly the one read:
		// an owner added meanwhile fails the patch, which is retried.
		pvc.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim"))
		patch := client.MergeFromWithOptions(pvc.DeepCopy(), client.MergeFromWithOptimisticLock{})
		pvc.OwnerReferences = keep
		if err := s.Patch(ctx, pvc, patch, engine.Silent()); client.IgnoreNotFound(err) != nil {
			return false, fmt.Errorf("remove the StatefulSet owner of PVC %s, to keep it: %w", pvc.Name, err)
		}
		released = append(released, pvc.Name)
		changed = true
	}
	if changed {
		s.Event(corev1.EventTypeNormal, engine.EventFinalizing, "Finalize", fmt.Sprintf(
			"deletionPolicy is %s: StatefulSet %s set to retain its volumes before the deletion%s.",
			db.Spec.DeletionPolicy, db.Name, releasedText(released)))
	}
	return changed, nil
}

func releasedText(names []string) string {
	if len(names) == 0 {
		return ""
	}
	return "; PVCs " + strings.Join(names, ", ") + " no longer owned by it"
}

// isDataClaim reports whether name is one of db's data PVCs, data-<name>-<ordinal>.
func isDataClaim(db *v1beta1.DatabaseCluster, name string) bool {
	ordinal, ok := strings.CutPrefix(name, DataVolume+"-"+db.Name+"-")
	if !ok {
		return false
	}
	_, err := strconv.ParseUint(ordinal, 10, 32)
	return err == nil
}

// withoutStatefulSetOwner is refs without the owner references to the StatefulSet named
// name, which the StatefulSet controller adds under whenDeleted Delete.
func withoutStatefulSetOwner(refs []metav1.OwnerReference, name string) []metav1.OwnerReference {
	var keep []metav1.OwnerReference
	for _, r := range refs {
		if r.Kind == "StatefulSet" && r.Name == name && strings.HasPrefix(r.APIVersion, appsv1.GroupName+"/") {
			continue
		}
		keep = append(keep, r)
	}
	return keep
}
