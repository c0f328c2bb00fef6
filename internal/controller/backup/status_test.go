package backup

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
)

var t0 = time.Date(2025, 1, 31, 3, 0, 0, 0, time.UTC)

func at(minute int) metav1.Time { return metav1.NewTime(t0.Add(time.Duration(minute) * time.Minute)) }

func job(name string, created int, outcome batchv1.JobConditionType, finished int) batchv1.Job {
	j := batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: at(created)}}
	if outcome != "" {
		j.Status.Conditions = []batchv1.JobCondition{{Type: outcome, Status: corev1.ConditionTrue, LastTransitionTime: at(finished),
			Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit"}}
		if outcome == batchv1.JobComplete {
			j.Status.CompletionTime = &metav1.Time{Time: at(finished).Time}
		}
	}
	return j
}

func TestDeriveStatus(t *testing.T) {
	prior := at(-60)
	tests := map[string]struct {
		backup        *mooringv1.Backup
		o             observed
		phase         mooringv1.BackupPhase
		ready, lastOK metav1.ConditionStatus
		lastJob       string
		success, fail *metav1.Time
	}{
		"database missing": {
			backup: newBackup(nil), o: observed{waitReason: mooringv1.ReasonDatabaseNotFound, waitMessage: "no db"},
			phase: mooringv1.BackupPending, ready: metav1.ConditionFalse, lastOK: metav1.ConditionUnknown,
		},
		"schedule that never runs": {
			backup: newBackup(nil), o: observed{cronJob: &batchv1.CronJob{}, scheduleProblem: "spec.schedule never runs"},
			phase: mooringv1.BackupFailed, ready: metav1.ConditionFalse, lastOK: metav1.ConditionUnknown,
		},
		"schedule too frequent, suspended, after a success": {
			backup: newBackup(func(b *mooringv1.Backup) { b.Spec.Suspend = true }),
			o:      observed{scheduleProblem: "runs every 1s", jobs: []batchv1.Job{job("nightly-1", 0, batchv1.JobComplete, 2)}},
			phase:  mooringv1.BackupFailed, ready: metav1.ConditionFalse, lastOK: metav1.ConditionTrue,
			lastJob: "nightly-1", success: timePtr(at(2)),
		},
		"scheduled, nothing run yet": {
			backup: newBackup(nil), o: observed{cronJob: &batchv1.CronJob{}},
			phase: mooringv1.BackupScheduled, ready: metav1.ConditionTrue, lastOK: metav1.ConditionUnknown,
		},
		"one success, one running": {
			backup: newBackup(nil),
			o:      observed{cronJob: &batchv1.CronJob{}, jobs: []batchv1.Job{job("nightly-1", 0, batchv1.JobComplete, 2), job("nightly-2", 10, "", 0)}},
			phase:  mooringv1.BackupScheduled, ready: metav1.ConditionTrue, lastOK: metav1.ConditionTrue,
			lastJob: "nightly-2", success: timePtr(at(2)),
		},
		"failure after success": {
			backup: newBackup(nil),
			o:      observed{jobs: []batchv1.Job{job("nightly-1", 0, batchv1.JobComplete, 2), job("nightly-manual-x", 5, batchv1.JobFailed, 7)}},
			phase:  mooringv1.BackupFailed, ready: metav1.ConditionFalse, lastOK: metav1.ConditionFalse,
			lastJob: "nightly-manual-x", success: timePtr(at(2)), fail: timePtr(at(7)),
		},
		"failure in the same second as a success": {
			backup: newBackup(nil),
			o:      observed{jobs: []batchv1.Job{job("nightly-1", 0, batchv1.JobComplete, 2), job("nightly-2", 1, batchv1.JobFailed, 2)}},
			phase:  mooringv1.BackupFailed, ready: metav1.ConditionFalse, lastOK: metav1.ConditionFalse,
			lastJob: "nightly-2", success: timePtr(at(2)), fail: timePtr(at(2)),
		},
		"suspended wins over a failure": {
			backup: newBackup(func(b *mooringv1.Backup) { b.Spec.Suspend = true }),
			o:      observed{jobs: []batchv1.Job{job("nightly-1", 0, batchv1.JobFailed, 1)}},
			phase:  mooringv1.BackupSuspended, ready: metav1.ConditionTrue, lastOK: metav1.ConditionFalse,
			lastJob: "nightly-1", fail: timePtr(at(1)),
		},
		"history pruned: status keeps the later time": {
			backup: newBackup(func(b *mooringv1.Backup) {
				b.Status.LastSuccessfulTime = timePtr(at(30))
				b.Status.LastBackupJob = "nightly-9"
			}),
			o:     observed{jobs: []batchv1.Job{job("nightly-1", 0, batchv1.JobComplete, 2)}},
			phase: mooringv1.BackupScheduled, ready: metav1.ConditionTrue, lastOK: metav1.ConditionTrue,
			lastJob: "nightly-1", success: timePtr(at(30)),
		},
		"older failure in status, newer success": {
			backup: newBackup(func(b *mooringv1.Backup) { b.Status.LastFailedTime = &prior }),
			o:      observed{jobs: []batchv1.Job{job("nightly-1", 0, batchv1.JobComplete, 2)}},
			phase:  mooringv1.BackupScheduled, ready: metav1.ConditionTrue, lastOK: metav1.ConditionTrue,
			lastJob: "nightly-1", success: timePtr(at(2)), fail: &prior,
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			b := tt.backup
			deriveStatus(b, tt.o)
			ready := meta.FindStatusCondition(b.Status.Conditions, mooringv1.ConditionReady)
			lastOK := meta.FindStatusCondition(b.Status.Conditions, mooringv1.ConditionLastBackupSucceeded)
			if b.Status.Phase != tt.phase || ready.Status != tt.ready || lastOK.Status != tt.lastOK {
				t.Errorf("phase %s Ready %s (%s) LastBackupSucceeded %s (%s); want %s %s %s",
					b.Status.Phase, ready.Status, ready.Message, lastOK.Status, lastOK.Message, tt.phase, tt.ready, tt.lastOK)
			}
			if !b.Status.LastSuccessfulTime.Equal(tt.success) || !b.Status.LastFailedTime.Equal(tt.fail) {
				t.Errorf("lastSuccessfulTime %v lastFailedTime %v, want %v %v", b.Status.LastSuccessfulTime, b.Status.LastFailedTime, tt.success, tt.fail)
			}
			if tt.lastJob != "" && b.Status.LastBackupJob != tt.lastJob {
				t.Errorf("lastBackupJob %q, want %q", b.Status.LastBackupJob, tt.lastJob)
			}
			// Derived twice from the same input, status is the same: no write on resync.
			again := b.DeepCopy()
			deriveStatus(again, tt.o)
			if !equalStatus(b, again) {
				t.Errorf("status changes when derived again:\n%+v\n%+v", b.Status, again.Status)
			}
		})
	}
}

func TestLastScheduleTimeFromCronJob(t *testing.T) {
	b := newBackup(nil)
	scheduled := at(5)
	deriveStatus(b, observed{cronJob: &batchv1.CronJob{Status: batchv1.CronJobStatus{LastScheduleTime: &scheduled}}})
	if !b.Status.LastScheduleTime.Equal(&scheduled) {
		t.Errorf("lastScheduleTime %v, want %v", b.Status.LastScheduleTime, scheduled)
	}
}

func equalStatus(a, b *mooringv1.Backup) bool {
	for i := range a.Status.Conditions {
		a.Status.Conditions[i].LastTransitionTime = metav1.Time{}
	}
	for i := range b.Status.Conditions {
		b.Status.Conditions[i].LastTransitionTime = metav1.Time{}
	}
	return meta.IsStatusConditionTrue(a.Status.Conditions, mooringv1.ConditionReady) == meta.IsStatusConditionTrue(b.Status.Conditions, mooringv1.ConditionReady) &&
		a.Status.Phase == b.Status.Phase && a.Status.LastBackupJob == b.Status.LastBackupJob &&
		a.Status.LastSuccessfulTime.Equal(b.Status.LastSuccessfulTime) && a.Status.LastFailedTime.Equal(b.Status.LastFailedTime) &&
		len(a.Status.Conditions) == len(b.Status.Conditions)
}

func timePtr(t metav1.Time) *metav1.Time { return &t }
