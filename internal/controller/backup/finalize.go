package backup

import (
	"context"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/internal/engine"
)

// Finalizer is the cleanup finalizer under cleanupPolicy Delete. Under Retain nothing is
// removed (the volume has no owner reference) and deletion needs no finalizer.
func (Handler) Finalizer(b *mooringv1.Backup) string {
	if b.Spec.CleanupPolicy == mooringv1.CleanupDelete {
		return mooringv1.BackupCleanupFinalizer
	}
	return ""
}

// Finalize removes the dumps of a Backup deleted with cleanupPolicy Delete: it stops new
// dumps, runs the cleanup Job, deletes the volume Mooring created once the Job has
// succeeded (unless the Job reports files in it that are not the Backup's:
// finalize_report.go), and only then lets the Backup go. Every wait is reported in status
// and events.
func (h Handler) Finalize(ctx context.Context, s *engine.Scope[*mooringv1.Backup]) (bool, ctrl.Result, error) {
	b := s.Object
	if b.Spec.CleanupPolicy != mooringv1.CleanupDelete {
		// Changed to Retain after deletion began: the way out of a cleanup that cannot succeed.
		s.Event(corev1.EventTypeNormal, mooringv1.ReasonDumpsRetained, "Finalize",
			fmt.Sprintf("cleanupPolicy is Retain: the dumps in PVC %s are kept.", b.ClaimName()))
		return release(ctx, s)
	}
	if err := stopDumps(ctx, s); err != nil {
		return false, ctrl.Result{}, err
	}
	claim := StorageClaim(b)
	if nothing, err := h.nothingToClean(ctx, s, claim); err != nil || nothing {
		if err != nil {
			return false, ctrl.Result{}, err
		}
		return release(ctx, s)
	}

	switch {
	case engine.HasCondition(b, mooringv1.ConditionReady, metav1.ConditionFalse, mooringv1.ReasonCleanedUp):
		return finishCleanup(ctx, s, claim)
	case engine.HasCondition(b, mooringv1.ConditionReady, metav1.ConditionFalse, mooringv1.ReasonStorageKept):
		return release(ctx, s) // the volume stays: it holds more than the Backup's dumps
	}
	job, err := cleanupJob(ctx, s)
	if err != nil {
		return false, ctrl.Result{}, err
	}
	if job == nil {
		created, err := h.startCleanup(ctx, s)
		if err != nil || !created {
			return false, ctrl.Result{}, err
		}
		msg := fmt.Sprintf("Removing the dumps under %s in PVC %s with Job %s (cleanupPolicy Delete); the Backup is deleted when it succeeds.",
			b.DumpPath(), b.ClaimName(), CleanupJobName(b))
		s.Event(corev1.EventTypeNormal, engine.EventFinalizing, "Finalize", msg)
		engine.SetCondition(b, mooringv1.ConditionReady, metav1.ConditionFalse, mooringv1.ReasonCleaningUp, msg)
		return false, ctrl.Result{}, nil
	}
	if !isCleanupJobOf(job, b) {
		// Left by an earlier Backup of the same name (its finalizer was removed by hand):
		// its outcome says nothing about this Backup's dumps. Its deletion brings the
		// Backup back through the Job watch.
		return false, ctrl.Result{}, deleteJob(ctx, s, job)
	}
	finished, failed := jobOutcome(job)
	switch {
	case finished && !failed:
		// Recorded in status now, acted on by the next reconcile (finishCleanup). Mooring's
		// volume goes only when the cleanup reported nothing else left in it.
		if claim != nil {
			left, err := h.leftovers(ctx, job)
			if err != nil {
				return false, ctrl.Result{}, err
			}
			if left != "" {
				msg, err := keepStorage(ctx, s, claim, left)
				if err != nil {
					return false, ctrl.Result{}, err
				}
				engine.SetCondition(b, mooringv1.ConditionReady, metav1.ConditionFalse, mooringv1.ReasonStorageKept, msg)
				return false, engine.RequeueAfter(outcomeRecorded), nil
			}
		}
		msg := fmt.Sprintf("Job %s removed the dumps under %s in PVC %s; deleting the Backup.", job.Name, b.DumpPath(), b.ClaimName())
		s.Event(corev1.EventTypeNormal, mooringv1.ReasonCleanedUp, "Finalize", msg)
		engine.SetCondition(b, mooringv1.ConditionReady, metav1.ConditionFalse, mooringv1.ReasonCleanedUp, msg)
		return false, engine.RequeueAfter(outcomeRecorded), nil
	case failed:
		msg := fmt.Sprintf("Cleanup Job %s failed; the Backup is kept with its dumps. Delete the Job to try again, "+
			"or set spec.cleanupPolicy to Retain to keep the dumps and let the Backup go.", job.Name)
		if !engine.HasCondition(b, mooringv1.ConditionReady, metav1.ConditionFalse, mooringv1.ReasonCleanupFailed) {
			s.Event(corev1.EventTypeWarning, mooringv1.ReasonCleanupFailed, "Finalize", msg)
		}
		b.Status.Phase = mooringv1.BackupFailed
		engine.SetCondition(b, mooringv1.ConditionReady, metav1.ConditionFalse, mooringv1.ReasonCleanupFailed, msg)
	default:
		engine.SetCondition(b, mooringv1.ConditionReady, metav1.ConditionFalse, mooringv1.ReasonCleaningUp, fmt.Sprintf(
			"Waiting for cleanup Job %s to remove the dumps under %s in PVC %s.", job.Name, b.DumpPath(), b.ClaimName()))
	}
	// The Job watch brings the Backup back when the Job finishes.
	return false, ctrl.Result{}, nil
}

// stopDumps deletes the CronJob and the unfinished on-demand Jobs: no dump may start, or
// go on, while the dumps are removed. Jobs of the CronJob go with it (garbage
// collection); on-demand Jobs are the Backup's own.
func stopDumps(ctx context.Context, s *engine.Scope[*mooringv1.Backup]) error {
	b := s.Object
	if err := s.Delete(ctx, &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Namespace: b.Namespace, Name: b.Name}}); err != nil {
		return err
	}
	jobs, err := dumpJobs(ctx, s)
	if err != nil {
		return err
	}
	for i := range jobs {
		if jobs[i].Labels[mooringv1.BackupJobTypeLabel] == JobManual && !jobFinished(&jobs[i]) {
			if err := s.Delete(ctx, &jobs[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

// nothingToClean reports whether the Backup's volume holds none of its dumps, so that it
// may go at once: the user's claim (claim nil) does not exist or is being deleted, or
// Mooring's own claim was never made.
func (h Handler) nothingToClean(ctx context.Context, s *engine.Scope[*mooringv1.Backup], claim *corev1.PersistentVolumeClaim) (bool, error) {
	b := s.Object
	if claim != nil {
		live := &corev1.PersistentVolumeClaim{}
		err := s.Client.Get(ctx, client.ObjectKeyFromObject(claim), live)
		if apierrors.IsNotFound(err) || (err == nil && !isStorageOf(live, b)) {
			return true, nil // Mooring never made the volume: no dump of this Backup to remove
		}
		if err != nil {
			return false, fmt.Errorf("get PVC %s: %w", claim.Name, err)
		}
		return false, nil
	}
	// The user's volume: a cleanup Job on a claim that does not exist would sit Pending for
	// ever, and keep the Backup with it. Read past the cache, which may not hold the claim
	// yet; a claim being deleted takes its files with it and takes no new pod.
	live := pvcMetadata()
	err := h.APIReader.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: b.Spec.Storage.ExistingClaim}, live)
	if err != nil && !apierrors.IsNotFound(err) {
		return false, fmt.Errorf("get PVC %s: %w", b.Spec.Storage.ExistingClaim, err)
	}
	if err == nil && live.DeletionTimestamp == nil {
		return false, nil
	}
	state := "does not exist"
	if err == nil {
		state = "is being deleted"
	}
	s.Event(corev1.EventTypeNormal, mooringv1.ReasonNothingToClean, "Finalize", fmt.Sprintf(
		"PVC %s named in spec.storage.existingClaim %s: nothing to clean up; deleting the Backup.", b.Spec.Storage.ExistingClaim, state))
	return true, nil
}

// The cleanup Job is created without an owner reference to the Backup. The Backup is
// being deleted when the Job is made: under foreground deletion (kubectl delete
// --cascade=foreground, some GitOps tools) the garbage collector deletes every dependent
// of the Backup, a Job created with an owner reference among them, and the cleanup would
// be started again for ever. The Job carries the Backup's labels instead, which map it
// back to the Backup (the Job watch) and keep it in the cache, and the Backup's UID in
// FinalizingUIDAnnotation; Finalize deletes it once its outcome has been read.

// The Job is deleted only after its outcome has been written to the Backup's status (the
// Ready condition, reason CleanedUp), by the reconcile after the one that read it. Deleted
// at once, a finalizer patch that then failed (an optimistic-lock conflict, say) would
// find no Job on the retry and start the cleanup again.

// outcomeRecorded is how soon the reconcile after the one that recorded the cleanup's
// outcome comes: status writes do not bring the Backup back by themselves.
const outcomeRecorded = time.Second

// finishCleanup acts on the recorded outcome of a successful cleanup: Mooring's volume
// goes, then the Job, then the Backup. The Job removed the files first, which matters when
// the volume's reclaim policy keeps the data after the claim is deleted.
func finishCleanup(ctx context.Context, s *engine.Scope[*mooringv1.Backup], claim *corev1.PersistentVolumeClaim) (bool, ctrl.Result, error) {
	if claim != nil {
		if err := s.Client.Delete(ctx, claim); client.IgnoreNotFound(err) != nil {
			return false, ctrl.Result{}, fmt.Errorf("delete PVC %s: %w", claim.Name, err)
		}
	}
	return release(ctx, s)
}

// cleanupJob returns the Backup's cleanup Job from the cache, nil when there is none.
func cleanupJob(ctx context.Context, s *engine.Scope[*mooringv1.Backup]) (*batchv1.Job, error) {
	b := s.Object
	job := &batchv1.Job{}
	err := s.Client.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: CleanupJobName(b)}, job)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get Job %s: %w", CleanupJobName(b), err)
	}
	return job, nil
}

// isCleanupJobOf reports whether job was made for this Backup (not for an earlier one of
// the same name): it carries the Backup's UID, or, made by an earlier version of Mooring,
// the Backup's controller reference.
func isCleanupJobOf(job *batchv1.Job, b *mooringv1.Backup) bool {
	return job.Annotations[mooringv1.FinalizingUIDAnnotation] == string(b.UID) || metav1.IsControlledBy(job, b)
}

// startCleanup creates the cleanup Job. created is false, without an error, when a Job of
// that name exists already but the cache has not seen it yet: its creation event brings
// the Backup back.
func (h Handler) startCleanup(ctx context.Context, s *engine.Scope[*mooringv1.Backup]) (created bool, err error) {
	job := CleanupJob(s.Object)
	err = s.Client.Create(ctx, job, client.FieldOwner(engine.FieldOwner))
	if apierrors.IsAlreadyExists(err) {
		// One the cache cannot see (no Mooring labels) would never bring the Backup back.
		live := &metav1.PartialObjectMetadata{}
		live.SetGroupVersionKind(batchv1.SchemeGroupVersion.WithKind("Job"))
		if err := h.APIReader.Get(ctx, client.ObjectKeyFromObject(job), live); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		if live.Labels[mooringv1.InstanceLabel] != s.Object.Name || live.Labels[mooringv1.ComponentLabel] != Component {
			return false, fmt.Errorf("job %s exists and was not created by Mooring for this Backup; delete it so the dumps can be cleaned up", job.Name)
		}
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("create Job %s: %w", job.Name, err)
	}
	return true, nil
}

// release lets the Backup go, and its cleanup Job with it if one was started: nothing else
// would ever delete a Job without an owner.
func release(ctx context.Context, s *engine.Scope[*mooringv1.Backup]) (bool, ctrl.Result, error) {
	job, err := cleanupJob(ctx, s)
	if err == nil && job != nil && isCleanupJobOf(job, s.Object) {
		err = deleteJob(ctx, s, job)
	}
	if err != nil {
		return false, ctrl.Result{}, err
	}
	return true, ctrl.Result{}, nil
}

// deleteJob deletes job, and its pods with it, unless it is already gone or replaced.
func deleteJob(ctx context.Context, s *engine.Scope[*mooringv1.Backup], job *batchv1.Job) error {
	return engine.DeleteExact(ctx, s.Client, job)
}
