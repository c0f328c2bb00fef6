package backup_test

import (
	"fmt"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/internal/controller/backup"
	"github.com/mooringhq/mooring/internal/testutil"
)

// An on-demand backup asked for while the Backup's scheduled Job runs waits for it
// (BackupNowWaiting naming the Job, a Normal event), and starts once it has finished.
func TestBackupNowWaitsForARunningBackup(t *testing.T) {
	ns := env.Namespace(t)
	db := createDB(t, ns, "orders")
	b := createBackup(t, ns, "nightly", "orders", nil)
	key := client.ObjectKeyFromObject(b)
	makeRunning(t, db)
	cj := &batchv1.CronJob{}
	testutil.WaitFor(t, env.Client, key, cj, "CronJob", func(*batchv1.CronJob) error { return nil })
	// Play the CronJob controller: a scheduled Job that runs.
	running := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "nightly-29000001", Namespace: ns, Labels: cj.Spec.JobTemplate.Labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(cj, batchv1.SchemeGroupVersion.WithKind("CronJob"))}},
		Spec: cj.Spec.JobTemplate.Spec,
	}
	if err := env.Client.Create(ctx, running); err != nil {
		t.Fatal(err)
	}

	testutil.Update(t, env.Client, key, &mooringv1.Backup{}, func(b *mooringv1.Backup) {
		b.Annotations = map[string]string{mooringv1.BackupNowAnnotation: "now"}
	})
	manual := map[string]string{mooringv1.InstanceLabel: "nightly", mooringv1.BackupJobTypeLabel: backup.JobManual}
	testutil.WaitFor(t, env.Client, key, &mooringv1.Backup{}, "BackupNowWaiting naming the running Job", func(b *mooringv1.Backup) error {
		c := meta.FindStatusCondition(b.Status.Conditions, mooringv1.ConditionBackupNowWaiting)
		if c == nil || c.Status != metav1.ConditionTrue || c.Reason != mooringv1.ReasonBackupInProgress || !strings.Contains(c.Message, running.Name) {
			return fmt.Errorf("BackupNowWaiting %+v", c)
		}
		return nil
	})
	if jobs := listJobs(t, ns, manual); len(jobs) != 0 {
		t.Fatalf("an on-demand Job %s was started beside the running %s", jobs[0].Name, running.Name)
	}
	if e := testutil.WaitEvent(t, env.Client, ns, corev1.EventTypeNormal, mooringv1.ReasonBackupInProgress, "nightly"); !strings.Contains(e.Note, running.Name) {
		t.Errorf("BackupInProgress event %q does not name the running Job", e.Note)
	}

	testutil.FinishJob(t, env.Client, client.ObjectKeyFromObject(running), true)
	name := backup.ManualJobName(b, "now")
	testutil.WaitFor(t, env.Client, types.NamespacedName{Namespace: ns, Name: name}, &batchv1.Job{}, "the on-demand Job once the other finished", func(*batchv1.Job) error { return nil })
	testutil.WaitFor(t, env.Client, key, &mooringv1.Backup{}, "BackupNowWaiting gone", func(b *mooringv1.Backup) error {
		if c := meta.FindStatusCondition(b.Status.Conditions, mooringv1.ConditionBackupNowWaiting); c != nil {
			return fmt.Errorf("BackupNowWaiting %+v", c)
		}
		return nil
	})
}
