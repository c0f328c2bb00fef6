package backup

import (
	"fmt"
	"slices"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/internal/engine"
)

// A Backup dumps one database into one directory, one dump at a time: two at once
// would load the database twice and, started in the same second, pick the same file
// name. The CronJob forbids concurrent runs of its own; an on-demand backup waits here
// for any running dump Job of the Backup, scheduled or on demand. (A scheduled run that
// starts while an on-demand Job runs cannot be held back by the operator: the backup
// script waits for the other dump instead, internal/dump/backup.sh.)

// runningJob is the name of a dump Job that has not finished, the first by name; "" when
// none runs.
func runningJob(jobs []batchv1.Job) string {
	var names []string
	for i := range jobs {
		if !jobFinished(&jobs[i]) {
			names = append(names, jobs[i].Name)
		}
	}
	if len(names) == 0 {
		return ""
	}
	return slices.Min(names)
}

// backupNowWaiting sets BackupNowWaiting while the on-demand backup waits for running,
// with a Normal event when the wait begins, and removes it otherwise.
func backupNowWaiting(s *engine.Scope[*mooringv1.Backup], running string) {
	b := s.Object
	if running == "" {
		apimeta.RemoveStatusCondition(&b.Status.Conditions, mooringv1.ConditionBackupNowWaiting)
		return
	}
	msg := fmt.Sprintf("Job %s of this Backup is still running; the backup the %s annotation asks for starts when it has finished (one dump at a time per Backup).",
		running, mooringv1.BackupNowAnnotation)
	if !engine.HasCondition(b, mooringv1.ConditionBackupNowWaiting, metav1.ConditionTrue, mooringv1.ReasonBackupInProgress) {
		s.Event(corev1.EventTypeNormal, mooringv1.ReasonBackupInProgress, "Backup", msg)
	}
	engine.SetCondition(b, mooringv1.ConditionBackupNowWaiting, metav1.ConditionTrue, mooringv1.ReasonBackupInProgress, msg)
}
