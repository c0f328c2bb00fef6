package jobstatus

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Phase is where a Job is in its one run.
type Phase string

// The phases of a Job. Only a Complete or Failed condition that is True ends a run: the
// interim FailureTarget and SuccessCriteriaMet conditions do not, as the Job's pods may
// still be stopping.
const (
	// Pending: no pod has started yet.
	Pending Phase = "Pending"
	// Running: a pod has started, and the Job has not finished.
	Running Phase = "Running"
	// Succeeded: the Job is Complete.
	Succeeded Phase = "Succeeded"
	// Failed: the Job has Failed (its backoff limit or deadline was reached).
	Failed Phase = "Failed"
)

// Status is what a Job's status says about its run.
type Status struct {
	Phase Phase
	// Reason and Message are those of the Failed condition (BackoffLimitExceeded, ...).
	Reason, Message string
	// At is when the Job finished: its completion time, or its terminal condition's last
	// transition. Zero while it runs.
	At metav1.Time
}

// Of reads job's status.
func Of(job *batchv1.Job) Status {
	for _, c := range job.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			at := c.LastTransitionTime
			if job.Status.CompletionTime != nil {
				at = *job.Status.CompletionTime
			}
			return Status{Phase: Succeeded, At: at}
		case batchv1.JobFailed:
			return Status{Phase: Failed, Reason: c.Reason, Message: c.Message, At: c.LastTransitionTime}
		}
	}
	if job.Status.Active == 0 && job.Status.StartTime == nil {
		return Status{Phase: Pending}
	}
	return Status{Phase: Running}
}

// Finished reports whether the run is over, successfully or not.
func (s Status) Finished() bool { return s.Phase == Succeeded || s.Phase == Failed }

// Failure says why a failed Job failed, "Reason: message" ("failed" when the Job gives no
// reason); "" for any other phase.
func (s Status) Failure() string {
	if s.Phase != Failed {
		return ""
	}
	msg := s.Reason
	if s.Message != "" {
		if msg != "" {
			msg += ": "
		}
		msg += s.Message
	}
	if msg == "" {
		msg = "failed"
	}
	return msg
}
