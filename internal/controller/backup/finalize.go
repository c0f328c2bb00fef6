package backup

import (
	"context"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/internal/engine"
)

// CleanupFinalizer keeps a Backup with cleanupPolicy Delete until its dumps are removed.
const CleanupFinalizer = "mooring.dev/cleanup"

// Finalizer is the cleanup finalizer under cleanupPolicy Delete. Under Retain nothing is
// removed (the volume has no owner reference) and deletion needs no finalizer.
func (Handler) Finalizer(b *mooringv1.Backup) string {
	if b.Spec.CleanupPolicy == mooringv1.CleanupDelete {
		return CleanupFinalizer
	}
	return ""
}

// Finalize removes the dumps of a Backup deleted with cleanupPolicy Delete: it stops new
// dumps, runs the cleanup Job, deletes the volume Mooring created once the Job has
// succeeded, and only then lets the Backup go. Every wait is reported in status and events.
func (h Handler) Finalize(ctx context.Context, s *engine.Scope[*mooringv1.Backup]) (bool, ctrl.Result, error) {
	b := s.Object
	if b.Spec.CleanupPolicy != mooringv1.CleanupDelete {
		// Changed to Retain after deletion began: the way out of a cleanup that cannot succeed.
		s.Event(corev1.EventTypeNormal, ReasonDumpsRetained, "Finalize",
			fmt.Sprintf("cleanupPolicy is Retain: the dumps in PVC %s are kept.", b.ClaimName()))
		return true, ctrl.Result{}, nil
	}
	// No dump may start, or go on, while the dumps are removed. Jobs of the CronJob go with
	// it (garbage collection); on-demand Jobs are the Backup's own.
	if err := s.Delete(ctx, &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Namespace: b.Namespace, Name: b.Name}}); err != nil {
		return false, ctrl.Result{}, err
	}
	jobs, err := dumpJobs(ctx, s)
	if err != nil {
		return false, ctrl.Result{}, err
	}
	for i := range jobs {
		if jobs[i].Labels[JobTypeLabel] == JobManual && !jobFinished(&jobs[i]) {
			if err := s.Delete(ctx, &jobs[i]); err != nil {
				return false, ctrl.Result{}, err
			}
		}
	}

	claim := StorageClaim(b)
	if claim == nil {
		// The user's volume: a cleanup Job on a claim that does not exist would sit Pending
		// for ever, and keep the Backup with it. Read past the cache, which may not hold
		// the claim yet; a claim being deleted takes its files with it and takes no new pod.
		live := pvcMetadata()
		err := h.APIReader.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: b.Spec.Storage.ExistingClaim}, live)
		if err != nil && !apierrors.IsNotFound(err) {
			return false, ctrl.Result{}, fmt.Errorf("get PVC %s: %w", b.Spec.Storage.ExistingClaim, err)
		}
		if apierrors.IsNotFound(err) || live.DeletionTimestamp != nil {
			state := "does not exist"
			if err == nil {
				state = "is being deleted"
			}
			s.Event(corev1.EventTypeNormal, ReasonNothingToClean, "Finalize", fmt.Sprintf(
				"PVC %s named in spec.storage.existingClaim %s: nothing to clean up; deleting the Backup.", b.Spec.Storage.ExistingClaim, state))
			return true, ctrl.Result{}, nil
		}
	}
	if claim != nil {
		live := &corev1.PersistentVolumeClaim{}
		err := s.Client.Get(ctx, client.ObjectKeyFromObject(claim), live)
		if apierrors.IsNotFound(err) || (err == nil && !isStorageOf(live, b)) {
			return true, ctrl.Result{}, nil // Mooring never made the volume: no dump of this Backup to remove
		}
		if err != nil {
			return false, ctrl.Result{}, fmt.Errorf("get PVC %s: %w", claim.Name, err)
		}
	}

	job := &batchv1.Job{}
	err = s.Client.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: CleanupJobName(b)}, job)
	if apierrors.IsNotFound(err) {
		if err := s.Apply(ctx, CleanupJob(b)); err != nil {
			return false, ctrl.Result{}, err
		}
		msg := fmt.Sprintf("Removing the dumps under %s in PVC %s with Job %s (cleanupPolicy Delete); the Backup is deleted when it succeeds.",
			b.DumpPath(), b.ClaimName(), CleanupJobName(b))
		s.Event(corev1.EventTypeNormal, engine.EventFinalizing, "Finalize", msg)
		engine.SetCondition(b, engine.ConditionReady, metav1.ConditionFalse, ReasonCleaningUp, msg)
		return false, ctrl.Result{}, nil
	}
	if err != nil {
		return false, ctrl.Result{}, fmt.Errorf("get Job %s: %w", CleanupJobName(b), err)
	}
	finished, failed := jobOutcome(job)
	switch {
	case finished && !failed:
		if claim != nil {
			// Mooring's volume goes too; the Job first removed the files, which matters
			// when the volume's reclaim policy keeps the data after the claim is deleted.
			if err := s.Client.Delete(ctx, claim); client.IgnoreNotFound(err) != nil {
				return false, ctrl.Result{}, fmt.Errorf("delete PVC %s: %w", claim.Name, err)
			}
		}
		s.Event(corev1.EventTypeNormal, ReasonCleanedUp, "Finalize", fmt.Sprintf(
			"Job %s removed the dumps under %s in PVC %s; deleting the Backup.", job.Name, b.DumpPath(), b.ClaimName()))
		return true, ctrl.Result{}, nil
	case failed:
		msg := fmt.Sprintf("Cleanup Job %s failed; the Backup is kept with its dumps. Delete the Job to try again, "+
			"or set spec.cleanupPolicy to Retain to keep the dumps and let the Backup go.", job.Name)
		if !engine.HasCondition(b, engine.ConditionReady, metav1.ConditionFalse, ReasonCleanupFailed) {
			s.Event(corev1.EventTypeWarning, ReasonCleanupFailed, "Finalize", msg)
		}
		b.Status.Phase = mooringv1.BackupFailed
		engine.SetCondition(b, engine.ConditionReady, metav1.ConditionFalse, ReasonCleanupFailed, msg)
	default:
		engine.SetCondition(b, engine.ConditionReady, metav1.ConditionFalse, ReasonCleaningUp, fmt.Sprintf(
			"Waiting for cleanup Job %s to remove the dumps under %s in PVC %s.", job.Name, b.DumpPath(), b.ClaimName()))
	}
	// The Job watch brings the Backup back when the Job finishes.
	return false, ctrl.Result{}, nil
}
