package backup

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/internal/engine"
)

// ExistingClaimField indexes Backups by spec.storage.existingClaim, so a volume that
// appears finds the Backups waiting for it.
const ExistingClaimField = "spec.storage.existingClaim"

// claimsWatch names the on-demand watch of PersistentVolumeClaim metadata: only Backups
// with spec.storage.existingClaim need the user's volumes, which Mooring's own cache (its
// labelled volumes only) does not hold.
const claimsWatch = "claims"

// pvcMetadata returns an empty PersistentVolumeClaim metadata object, for reads that
// never need the claim's spec.
func pvcMetadata() *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim"))
	return m
}

// checkExistingClaim reports, for a Backup that names its own volume, why the volume
// cannot be used yet ("" when it can): the claim does not exist, or is being deleted. A
// dump Job would otherwise sit Pending on the missing volume, and with
// concurrencyPolicy Forbid block every later run.
func (h Handler) checkExistingClaim(ctx context.Context, s *engine.Scope[*mooringv1.Backup], o *observed) error {
	b := s.Object
	name := b.Spec.Storage.ExistingClaim
	if name == "" {
		return nil
	}
	if err := s.StartWatch(claimsWatch); err != nil {
		return err
	}
	claim := pvcMetadata()
	err := h.Claims.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: name}, claim)
	switch {
	case apierrors.IsNotFound(err):
		o.waitMessage = fmt.Sprintf("PersistentVolumeClaim %s named in spec.storage.existingClaim does not exist in namespace %s; backups start once it does.",
			name, b.Namespace)
	case err != nil:
		return fmt.Errorf("get PVC %s: %w", name, err)
	case claim.DeletionTimestamp != nil:
		o.waitMessage = fmt.Sprintf("PersistentVolumeClaim %s named in spec.storage.existingClaim is being deleted; backups start once it exists again.", name)
	default:
		return nil
	}
	o.waitReason = mooringv1.ReasonClaimNotFound
	if !engine.HasCondition(b, mooringv1.ConditionReady, metav1.ConditionFalse, o.waitReason) {
		s.Event(corev1.EventTypeWarning, o.waitReason, "Reconcile", o.waitMessage)
	}
	return nil
}
