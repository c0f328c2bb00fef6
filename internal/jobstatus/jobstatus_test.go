package jobstatus

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestOf(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Minute))
	cond := func(typ batchv1.JobConditionType, status corev1.ConditionStatus, reason, msg string) batchv1.JobCondition {
		return batchv1.JobCondition{Type: typ, Status: status, Reason: reason, Message: msg, LastTransitionTime: t0}
	}
	tests := map[string]struct {
		status      batchv1.JobStatus
		want        Status
		failure     string
		notFinished bool
	}{
		"new": {want: Status{Phase: Pending}, notFinished: true},
		"pod active": {status: batchv1.JobStatus{Active: 1, StartTime: &t0},
			want: Status{Phase: Running}, notFinished: true},
		"started, pod between retries": {status: batchv1.JobStatus{StartTime: &t0},
			want: Status{Phase: Running}, notFinished: true},
		"failure target only: pods still stopping": {
			status: batchv1.JobStatus{StartTime: &t0, Conditions: []batchv1.JobCondition{
				cond(batchv1.JobFailureTarget, corev1.ConditionTrue, "BackoffLimitExceeded", "")}},
			want: Status{Phase: Running}, notFinished: true},
		"complete at its completion time": {
			status: batchv1.JobStatus{CompletionTime: &t1, Conditions: []batchv1.JobCondition{
				cond(batchv1.JobComplete, corev1.ConditionTrue, "", "")}},
			want: Status{Phase: Succeeded, At: t1}},
		"complete without completion time": {
			status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{cond(batchv1.JobComplete, corev1.ConditionTrue, "", "")}},
			want:   Status{Phase: Succeeded, At: t0}},
		"failed": {
			status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{
				cond(batchv1.JobFailed, corev1.ConditionTrue, "BackoffLimitExceeded", "Job has reached the specified backoff limit")}},
			want:    Status{Phase: Failed, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit", At: t0},
			failure: "BackoffLimitExceeded: Job has reached the specified backoff limit"},
		"failed without message": {
			status:  batchv1.JobStatus{Conditions: []batchv1.JobCondition{cond(batchv1.JobFailed, corev1.ConditionTrue, "DeadlineExceeded", "")}},
			want:    Status{Phase: Failed, Reason: "DeadlineExceeded", At: t0},
			failure: "DeadlineExceeded"},
		"failed without reason or message": {
			status:  batchv1.JobStatus{Conditions: []batchv1.JobCondition{cond(batchv1.JobFailed, corev1.ConditionTrue, "", "")}},
			want:    Status{Phase: Failed, At: t0},
			failure: "failed"},
		"a False condition ends nothing": {
			status: batchv1.JobStatus{Active: 1, Conditions: []batchv1.JobCondition{cond(batchv1.JobFailed, corev1.ConditionFalse, "x", "y")}},
			want:   Status{Phase: Running}, notFinished: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := Of(&batchv1.Job{Status: tc.status})
			if got != tc.want {
				t.Errorf("Of = %+v, want %+v", got, tc.want)
			}
			if got.Finished() == tc.notFinished {
				t.Errorf("Finished() = %v for phase %s", got.Finished(), got.Phase)
			}
			if f := got.Failure(); f != tc.failure {
				t.Errorf("Failure() = %q, want %q", f, tc.failure)
			}
		})
	}
}
