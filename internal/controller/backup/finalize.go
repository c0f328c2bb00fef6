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
	"github.com/mooringhq/mooring/internal/jobstatus"
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
// and events. The checks run in order; the first that ends the run decides whether the
// Backup goes now or what it waits for.
func (h Handler) Finalize(ctx context.Context, s *engine.Scope[*mooringv1.Backup]) (bool, ctrl.Result, error) {
	c := &cleanup{h: h, s: s, b: s.Object, claim: StorageClaim(s.Object)}
	v, err := engine.RunSteps(ctx, c.deleteWanted, c.dumpsStopped, c.somethingToClean, c.outcomeNotRecorded,
		c.jobStarted, c.jobOurs, c.jobOutcome)
	if err != nil || !v.Done() {
		return false, v.Result(), err
	}
	return release(ctx, s)
}

// cleanup is one reconcile's run of the deletion checks, in the order Finalize lists them.
type cleanup struct {
	h Handler
	s *engine.Scope[*mooringv1.Backup]
	b *mooringv1.Backup
	// claim is the volume Mooring made for the dumps; nil for spec.storage.existingClaim.
	claim *corev1.PersistentVolumeClaim
	// job is the cleanup Job, once jobStarted found it.
	job *batchv1.Job
}

// deleteWanted lets the Backup go with its dumps under cleanupPolicy Retain: a policy
// changed to Retain after deletion began is the way out of a cleanup that cannot succeed.
func (c *cleanup) deleteWanted(context.Context) (engine.Verdict, error) {
	if c.b.Spec.CleanupPolicy == mooringv1.CleanupDelete {
		return engine.Next, nil
	}
	c.s.Event(corev1.EventTypeNormal, mooringv1.ReasonDumpsRetained, "Finalize",
		fmt.Sprintf("cleanupPolicy is Retain: the dumps in PVC %s are kept.", c.b.ClaimName()))
	return engine.Done(), nil
}

// dumpsStopped stops the dumps before they are removed.
func (c *cleanup) dumpsStopped(ctx context.Context) (engine.Verdict, error) {
	return engine.Next, stopDumps(ctx, c.s)
}

// somethingToClean lets the Backup go when its volume holds none of its dumps.
func (c *cleanup) somethingToClean(ctx context.Context) (engine.Verdict, error) {
	nothing, err := c.h.nothingToClean(ctx, c.s, c.claim)
	if err != nil || !nothing {
		return engine.Next, err
	}
	return engine.Done(), nil
}

// outcomeNotRecorded acts on the outcome of a successful cleanup an earlier reconcile
// recorded: Mooring's volume goes (finishCleanup), unless it holds more than the Backup's
// dumps, and then the Backup.
func (c *cleanup) outcomeNotRecorded(ctx context.Context) (engine.Verdict, error) {
	switch {
	case engine.HasCondition(c.b, mooringv1.ConditionReady, metav1.ConditionFalse, mooringv1.ReasonCleanedUp):
		return engine.Done(), finishCleanup(ctx, c.s, c.claim)
	case engine.HasCondition(c.b, mooringv1.ConditionReady, metav1.ConditionFalse, mooringv1.ReasonStorageKept):
		return engine.Done(), nil // the volume stays: it holds more than the Backup's dumps
	}
	return engine.Next, nil
}

// jobStarted finds the cleanup Job, or starts it. A Job that exists but is not in the cache
// yet brings the Backup back with its create event.
func (c *cleanup) jobStarted(ctx context.Context) (engine.Verdict, error) {
	job, err := cleanupJob(ctx, c.s)
	if err != nil || job != nil {
		c.job = job
		return engine.Next, err
	}
	created, err := c.h.startCleanup(ctx, c.s)
	if err != nil || !created {
		return engine.Wait(0), err
	}
	b := c.b
	msg := fmt.Sprintf("Removing the dumps under %s in PVC %s with Job %s (cleanupPolicy Delete); the Backup is deleted when it succeeds.",
		b.DumpPath(), b.ClaimName(), CleanupJobName(b))
	c.s.Event(corev1.EventTypeNormal, engine.EventFinalizing, "Finalize", msg)
	engine.SetCondition(b, mooringv1.ConditionReady, metav1.ConditionFalse, mooringv1.ReasonCleaningUp, msg)
	return engine.Wait(0), nil
}

// jobOurs deletes a Job left by an earlier Backup of the same name (its finalizer was
// removed by hand): its outcome says nothing about this Backup's dumps. Its deletion
// brings the Backup back through the Job watch.
func (c *cleanup) jobOurs(ctx context.Context) (engine.Verdict, error) {
	if isCleanupJobOf(c.job, c.b) {
		return engine.Next, nil
	}
	return engine.Wait(0), c.s.DeleteExact(ctx, c.job, "")
}

// jobOutcome records the cleanup's success, acted on by the next reconcile
// (outcomeNotRecorded), or reports its failure or progress; the Job watch brings the
// Backup back when the Job finishes.
func (c *cleanup) jobOutcome(ctx context.Context) (engine.Verdict, error) {
	b, job := c.b, c.job
	switch engine.JobPhase(job).Phase {
	case jobstatus.Succeeded:
		// Mooring's volume goes only when the cleanup reported nothing else left in it.
		if c.claim != nil {
			left, err := c.h.leftovers(ctx, job)
			if err != nil {
				return engine.Next, err
			}
			if left != "" {
				msg, err := keepStorage(ctx, c.s, c.claim, left)
				if err != nil {
					return engine.Next, err
				}
				engine.SetCondition(b, mooringv1.ConditionReady, metav1.ConditionFalse, mooringv1.ReasonStorageKept, msg)
				return engine.Wait(outcomeRecorded), nil
			}
		}
		msg := fmt.Sprintf("Job %s removed the dumps under %s in PVC %s; deleting the Backup.", job.Name, b.DumpPath(), b.ClaimName())
		c.s.Event(corev1.EventTypeNormal, mooringv1.ReasonCleanedUp, "Finalize", msg)
		engine.SetCondition(b, mooringv1.ConditionReady, metav1.ConditionFalse, mooringv1.ReasonCleanedUp, msg)
		return engine.Wait(outcomeRecorded), nil
	case jobstatus.Failed:
		msg := fmt.Sprintf("Cleanup Job %s failed; the Backup is kept with its dumps. Delete the Job to try again, "+
			"or set spec.cleanupPolicy to Retain to keep the dumps and let the Backup go.", job.Name)
		if !engine.HasCondition(b, mooringv1.ConditionReady, metav1.ConditionFalse, mooringv1.ReasonCleanupFailed) {
			c.s.Event(corev1.EventTypeWarning, mooringv1.ReasonCleanupFailed, "Finalize", msg)
		}
		b.Status.Phase = mooringv1.BackupFailed
		engine.SetCondition(b, mooringv1.ConditionReady, metav1.ConditionFalse, mooringv1.ReasonCleanupFailed, msg)
	default:
		engine.SetCondition(b, mooringv1.ConditionReady, metav1.ConditionFalse, mooringv1.ReasonCleaningUp, fmt.Sprintf(
			"Waiting for cleanup Job %s to remove the dumps under %s in PVC %s.", job.Name, b.DumpPath(), b.ClaimName()))
	}
	return engine.Wait(0), nil
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
// goes, then (release) the Job, then the Backup. The Job removed the files first, which
// matters when the volume's reclaim policy keeps the data after the claim is deleted.
func finishCleanup(ctx context.Context, s *engine.Scope[*mooringv1.Backup], claim *corev1.PersistentVolumeClaim) error {
	if claim == nil {
		return nil
	}
	return s.DeleteExact(ctx, claim, "")
}

// cleanupJob returns the Backup's cleanup Job from the cache, nil when there is none.
func cleanupJob(ctx context.Context, s *engine.Scope[*mooringv1.Backup]) (*batchv1.Job, error) {
	return s.Job(ctx, CleanupJobName(s.Object))
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
	// Finalize reports the start, in an event and the Ready condition.
	created, err = s.CreateOnce(ctx, job, engine.Unowned(), engine.Silent())
	if err != nil || created {
		return created, err
	}
	// It exists. One the cache cannot see (no Mooring labels) would never bring the
	// Backup back.
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

// release lets the Backup go, and its cleanup Job with it if one was started: nothing else
// would ever delete a Job without an owner.
func release(ctx context.Context, s *engine.Scope[*mooringv1.Backup]) (bool, ctrl.Result, error) {
	job, err := cleanupJob(ctx, s)
	if err == nil && job != nil && isCleanupJobOf(job, s.Object) {
		err = s.DeleteExact(ctx, job, "")
	}
	if err != nil {
		return false, ctrl.Result{}, err
	}
	return true, ctrl.Result{}, nil
}
