package database

import (
	"context"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/api/v1beta1"
	"github.com/mooringhq/mooring/internal/engine"
)

// resizeResult is what growStorage did.
type resizeResult struct {
	// recreating: the StatefulSet is being re-created and must not be applied.
	recreating bool
	// refused: the API server refused to expand a data PVC (its StorageClass does not
	// allow volume expansion, typically). The StatefulSet is applied with the size its
	// volumes have, have, since a StatefulSet's claim templates cannot change.
	refused bool
	have    resource.Quantity
}

// resizeRetryInterval is how often a refused expansion is tried again while nothing about
// the cluster changes (a StorageClass changed to allow expansion is not watched).
const resizeRetryInterval = 10 * time.Minute

// growStorage handles a grown spec.storage.size. A StatefulSet's volumeClaimTemplates
// cannot change, so, as `kubectl` users do by hand: expand every existing PVC, then delete
// the StatefulSet with orphan propagation (pods and PVCs keep running) so the next
// reconcile creates it again with the new template and adopts the same pods. When the API
// server refuses an expansion, the rest of the cluster is still reconciled: the refusal
// is reported (StorageResized=False, ResizeForbidden, one Warning event) and tried again
// when the spec changes, a reconcile is requested, or after resizeRetryInterval.
func (h Handler) growStorage(ctx context.Context, s *engine.Scope[*v1beta1.DatabaseCluster], want resource.Quantity) (resizeResult, error) {
	db := s.Object
	live := &appsv1.StatefulSet{}
	if err := s.Client.Get(ctx, client.ObjectKeyFromObject(db), live); err != nil {
		return resizeResult{}, client.IgnoreNotFound(err)
	}
	if live.DeletionTimestamp != nil {
		return resizeResult{recreating: true}, nil // re-creation under way: wait for the delete event
	}
	if len(live.Spec.VolumeClaimTemplates) == 0 || !metav1.IsControlledBy(live, db) {
		return resizeResult{}, nil
	}
	have := live.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage]
	if want.Cmp(have) <= 0 {
		h.Resizes.forget(db)
		return resizeResult{}, nil
	}
	refused := resizeResult{refused: true, have: have}
	if h.Resizes.refusedRecently(db, want) {
		return refused, nil // StorageResized already says why
	}
	pvcs, err := dataClaims(ctx, s)
	if err != nil {
		return resizeResult{}, err
	}
	for i := range pvcs {
		pvc := &pvcs[i]
		if cur := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; cur.Cmp(want) >= 0 {
			continue
		}
		patch := client.MergeFrom(pvc.DeepCopy())
		pvc.Spec.Resources.Requests[corev1.ResourceStorage] = want
		// Reported below, in one event for every volume, or in StorageResized.
		err := s.Patch(ctx, pvc, patch, engine.Silent())
		if apierrors.IsForbidden(err) || apierrors.IsInvalid(err) {
			h.Resizes.refused(db, want)
			class := "the cluster's default StorageClass"
			if c := pvc.Spec.StorageClassName; c != nil && *c != "" {
				class = "StorageClass " + *c
			}
			msg := fmt.Sprintf("Cannot grow the data volumes from %s to %s: the API server refused to expand PVC %s (%v). "+
				"The StatefulSet keeps %s. Allow volume expansion on %s (allowVolumeExpansion: true); Mooring tries again "+
				"within %s, or at once when a reconcile is requested.", have.String(), want.String(), pvc.Name, err, have.String(), class, resizeRetryInterval)
			if !engine.HasCondition(db, v1beta1.ConditionStorageResized, metav1.ConditionFalse, v1beta1.ReasonResizeForbidden) {
				s.Event(corev1.EventTypeWarning, v1beta1.ReasonResizeForbidden, "Resize", msg)
			}
			engine.SetCondition(db, v1beta1.ConditionStorageResized, metav1.ConditionFalse, v1beta1.ReasonResizeForbidden, msg)
			return refused, nil
		}
		if err != nil {
			return resizeResult{}, fmt.Errorf("expand PVC %s to %s: %w", pvc.Name, want.String(), err)
		}
	}
	h.Resizes.forget(db)
	if err := s.DeleteExact(ctx, live, metav1.DeletePropagationOrphan, engine.Silent()); err != nil {
		return resizeResult{}, fmt.Errorf("re-create StatefulSet %s for the new volume size: %w", live.Name, err)
	}
	msg := fmt.Sprintf("Growing data volumes from %s to %s: %d PVCs expanded, StatefulSet re-created with its pods kept.",
		have.String(), want.String(), len(pvcs))
	s.Event(corev1.EventTypeNormal, v1beta1.ReasonResizing, "Resize", msg)
	engine.SetCondition(db, v1beta1.ConditionStorageResized, metav1.ConditionFalse, v1beta1.ReasonResizing, msg)
	return resizeResult{recreating: true}, nil
}

// ResizeAttempts remembers, per cluster, the expansion the API server last refused, so
// that reconciles which change nothing do not send the refused write again. The zero value
// is ready to use; a nil *ResizeAttempts remembers nothing (every reconcile tries).
type ResizeAttempts struct {
	mu   sync.Mutex
	seen map[types.UID]resizeAttempt
}

type resizeAttempt struct {
	generation int64
	want       string
	requested  string // the reconcile-requested annotation at the time
	at         time.Time
}

func attemptOf(db *v1beta1.DatabaseCluster, want resource.Quantity) resizeAttempt {
	return resizeAttempt{generation: db.Generation, want: want.String(), requested: db.Annotations[mooringv1.ReconcileRequestedAnnotation]}
}

func (r *ResizeAttempts) refusedRecently(db *v1beta1.DatabaseCluster, want resource.Quantity) bool {
	if r == nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	last, ok := r.seen[db.UID]
	now := attemptOf(db, want)
	return ok && last.generation == now.generation && last.want == now.want && last.requested == now.requested &&
		time.Since(last.at) < resizeRetryInterval
}

func (r *ResizeAttempts) refused(db *v1beta1.DatabaseCluster, want resource.Quantity) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen == nil {
		r.seen = map[types.UID]resizeAttempt{}
	}
	a := attemptOf(db, want)
	a.at = time.Now()
	r.seen[db.UID] = a
}

func (r *ResizeAttempts) forget(db *v1beta1.DatabaseCluster) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.seen, db.UID)
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
		engine.SetCondition(db, v1beta1.ConditionStorageResized, metav1.ConditionFalse, v1beta1.ReasonExpanding, fmt.Sprintf(
			"%d of %d data volumes are not yet %s; the storage class must allow volume expansion.", waiting, bound, want.String()))
	default:
		engine.SetCondition(db, v1beta1.ConditionStorageResized, metav1.ConditionTrue, v1beta1.ReasonResized,
			fmt.Sprintf("All %d data volumes have %s.", bound, want.String()))
		db.Status.StorageSize = &want
	}
	return nil
}
