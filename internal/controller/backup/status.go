package backup

import (
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/internal/engine"
	"github.com/mooringhq/mooring/internal/jobstatus"
)

// observed is what one reconcile saw, for deriveStatus.
type observed struct {
	// waitReason and waitMessage say why the database cannot be backed up yet (it is not
	// Running, or the volume named in spec.storage.existingClaim is missing); empty when
	// nothing stands in the way.
	waitReason, waitMessage string
	// databaseGone is true when the database does not exist or is being deleted: no later
	// run can succeed, so the schedule is suspended.
	databaseGone bool
	// scheduleProblem says why spec.schedule cannot run (it never comes round, or runs
	// more often than backups can finish): a Backup admitted before the webhook checked
	// that. Empty when the schedule is fine.
	scheduleProblem string
	// cronJob is the live CronJob, nil before there is one.
	cronJob *batchv1.CronJob
	// jobs are the Backup's dump Jobs, scheduled and on demand (cleanup Jobs aside).
	jobs []batchv1.Job
}

// jobHistory is what the dump Jobs say about the latest backups.
type jobHistory struct {
	success, failure        *metav1.Time
	successJob, failureJob  string
	failureMessage, lastJob string
	lastJobCreated          metav1.Time
}

func readHistory(jobs []batchv1.Job) jobHistory {
	var h jobHistory
	for i := range jobs {
		j := &jobs[i]
		if h.lastJob == "" || h.lastJobCreated.Before(&j.CreationTimestamp) ||
			(h.lastJobCreated.Equal(&j.CreationTimestamp) && j.Name > h.lastJob) {
			h.lastJob, h.lastJobCreated = j.Name, j.CreationTimestamp
		}
		switch st := engine.JobPhase(j); st.Phase {
		case jobstatus.Succeeded:
			if h.success == nil || h.success.Before(&st.At) {
				h.success, h.successJob = &st.At, j.Name
			}
		case jobstatus.Failed:
			if h.failure == nil || h.failure.Before(&st.At) {
				h.failure, h.failureJob = &st.At, j.Name
				h.failureMessage = st.Failure()
			}
		}
	}
	return h
}

// later returns the later of a time already in status and one read from the Jobs: Jobs
// leave with the bounded history, what they told stays.
func later(have, seen *metav1.Time) *metav1.Time {
	if seen == nil || (have != nil && !have.Before(seen)) {
		return have
	}
	return seen.DeepCopy()
}

// deriveStatus sets the Backup's status from its CronJob, its Jobs and its database.
func deriveStatus(b *mooringv1.Backup, o observed) {
	if o.cronJob != nil && o.cronJob.Status.LastScheduleTime != nil {
		b.Status.LastScheduleTime = later(b.Status.LastScheduleTime, o.cronJob.Status.LastScheduleTime)
	}
	h := readHistory(o.jobs)
	b.Status.LastSuccessfulTime = later(b.Status.LastSuccessfulTime, h.success)
	b.Status.LastFailedTime = later(b.Status.LastFailedTime, h.failure)
	if h.lastJob != "" {
		b.Status.LastBackupJob = h.lastJob
	}

	ok, fail := b.Status.LastSuccessfulTime, b.Status.LastFailedTime
	// Times have a resolution of one second; a failure in the same second as a success
	// counts as the later one, so that status never hides a failure.
	lastFailed := fail != nil && (ok == nil || !fail.Before(ok))
	switch {
	case lastFailed:
		msg := "The last backup failed at " + stamp(fail) + "."
		if h.failureJob != "" && h.failure.Equal(fail) {
			msg = fmt.Sprintf("Job %s failed at %s (%s); see its pods' logs.", h.failureJob, stamp(fail), h.failureMessage)
		}
		engine.SetCondition(b, mooringv1.ConditionLastBackupSucceeded, metav1.ConditionFalse, mooringv1.ReasonBackupFailed, msg)
	case ok != nil:
		msg := "The last backup completed at " + stamp(ok) + "."
		if h.successJob != "" && h.success.Equal(ok) {
			msg = fmt.Sprintf("Job %s completed at %s.", h.successJob, stamp(ok))
		}
		engine.SetCondition(b, mooringv1.ConditionLastBackupSucceeded, metav1.ConditionTrue, mooringv1.ReasonBackupSucceeded, msg)
	default:
		engine.SetCondition(b, mooringv1.ConditionLastBackupSucceeded, metav1.ConditionUnknown, mooringv1.ReasonNoBackupYet, "No backup has finished yet.")
	}

	for _, check := range phaseChecks {
		if v, matched := check(b, o, lastFailed); matched {
			b.Status.Phase = v.phase
			engine.SetCondition(b, mooringv1.ConditionReady, v.ready, v.reason, v.message)
			return
		}
	}
}

// verdict is a phase and the Ready condition that goes with it.
type verdict struct {
	phase           mooringv1.BackupPhase
	ready           metav1.ConditionStatus
	reason, message string
}

// phaseChecks decide the phase, first match wins: nothing can run without the database;
// a suspended schedule is what the user asked for; then the last backup's outcome. A
// schedule that cannot run comes first: nothing else makes the Backup work.
var phaseChecks = []func(b *mooringv1.Backup, o observed, lastFailed bool) (verdict, bool){
	func(_ *mooringv1.Backup, o observed, _ bool) (verdict, bool) {
		return verdict{mooringv1.BackupFailed, metav1.ConditionFalse, mooringv1.ReasonInvalidSchedule, o.scheduleProblem}, o.scheduleProblem != ""
	},
	func(_ *mooringv1.Backup, o observed, _ bool) (verdict, bool) {
		return verdict{mooringv1.BackupPending, metav1.ConditionFalse, o.waitReason, o.waitMessage}, o.waitReason != ""
	},
	func(b *mooringv1.Backup, _ observed, _ bool) (verdict, bool) {
		return verdict{mooringv1.BackupSuspended, metav1.ConditionTrue, mooringv1.ReasonSuspended, fmt.Sprintf(
			"Scheduled backups are suspended (spec.suspend); the %s annotation still takes one.", mooringv1.BackupNowAnnotation)}, b.Spec.Suspend
	},
	func(b *mooringv1.Backup, _ observed, lastFailed bool) (verdict, bool) {
		return verdict{mooringv1.BackupFailed, metav1.ConditionFalse, mooringv1.ReasonBackupFailed,
			"The last backup failed; the LastBackupSucceeded condition says why."}, lastFailed
	},
	func(b *mooringv1.Backup, _ observed, _ bool) (verdict, bool) {
		return verdict{mooringv1.BackupScheduled, metav1.ConditionTrue, mooringv1.ReasonScheduled, fmt.Sprintf(
			"CronJob %s dumps database %s on schedule %q into PVC %s at %s, keeping the newest %d.",
			b.Name, b.Spec.DatabaseRef.Name, b.Spec.Schedule, b.ClaimName(), b.DumpPath(), max(b.Spec.Retention.KeepLast, 1))}, true
	},
}

func stamp(t *metav1.Time) string { return t.UTC().Format(time.RFC3339) }
