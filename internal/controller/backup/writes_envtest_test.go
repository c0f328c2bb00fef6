package backup_test

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/internal/controller/backup"
	"github.com/mooringhq/mooring/internal/testutil"
)

// The writes a Backup makes beside its CronJob go through the engine: the volume (created
// once, without an owner) and the on-demand Job are counted in
// mooring_child_operations_total and reported in events, and the Job is in status although
// its create event, the engine's own write, brings the Backup back no more (envtest runs
// no Job controller to write the Job again).
func TestBackupWritesGoThroughTheEngine(t *testing.T) {
	ns := env.Namespace(t)
	db := createDB(t, ns, "orders")
	makeRunning(t, db)
	claims, jobs := testutil.ChildOperations(t, "PersistentVolumeClaim", "created"), testutil.ChildOperations(t, "Job", "created")

	b := createBackup(t, ns, "nightly", "orders", func(b *mooringv1.Backup) {
		b.Annotations = map[string]string{mooringv1.BackupNowAnnotation: "first"}
	})
	job := backup.ManualJobName(b, "first")
	testutil.WaitFor(t, env.Client, client.ObjectKeyFromObject(b), &mooringv1.Backup{}, "status naming Job "+job, func(got *mooringv1.Backup) error {
		if got.Status.LastBackupJob != job || got.Status.Phase != mooringv1.BackupScheduled {
			return fmt.Errorf("lastBackupJob %q phase %q", got.Status.LastBackupJob, got.Status.Phase)
		}
		return nil
	})
	if got := testutil.ChildOperations(t, "PersistentVolumeClaim", "created") - claims; got < 1 {
		t.Errorf("the volume's create is not counted in mooring_child_operations_total (%v more)", got)
	}
	if got := testutil.ChildOperations(t, "Job", "created") - jobs; got < 1 {
		t.Errorf("the on-demand Job's create is not counted in mooring_child_operations_total (%v more)", got)
	}
	testutil.Eventually(t, testutil.DefaultTimeout, "events of the volume and the Job", func() error {
		events := &eventsv1.EventList{}
		if err := env.Client.List(ctx, events, client.InNamespace(ns)); err != nil {
			return err
		}
		var volume, summary bool
		var seen []string
		for _, e := range events.Items {
			if e.Type != corev1.EventTypeNormal || e.Regarding.Name != b.Name {
				continue
			}
			volume = volume || strings.Contains(e.Note, "PersistentVolumeClaim nightly-storage created for the dumps")
			summary = summary || strings.Contains(e.Note, "Job "+job+" created")
			seen = append(seen, e.Reason+": "+e.Note)
		}
		if !volume || !summary {
			return fmt.Errorf("events %q", seen)
		}
		return nil
	})
	// The metric counts writes: a converged Backup adds none.
	testutil.ExpectNoWrites(t, backup.Component, 1, func() {
		testutil.Update(t, env.Client, client.ObjectKeyFromObject(b), &mooringv1.Backup{}, func(b *mooringv1.Backup) {
			b.Annotations["example.com/touched"] = "yes"
		})
	})
}
