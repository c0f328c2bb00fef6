package database_test

import (
	"fmt"
	"slices"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/api/v1beta1"
	"github.com/mooringhq/mooring/internal/controller/database"
	"github.com/mooringhq/mooring/internal/testutil"
)

// A cluster with spec.bootstrap.backup loads the Backup's dump once its primary is ready,
// with a Job that reads the Backup's volume; it is not Running until the Job succeeded,
// then status.restoredFrom names the dump. A failed restore is a condition and an event,
// and is not run again by itself.
func TestBootstrapFromBackup(t *testing.T) {
	ns := env.Namespace(t)
	backup := &mooringv1.Backup{
		ObjectMeta: metav1.ObjectMeta{Name: "orders-nightly", Namespace: ns},
		Spec: mooringv1.BackupSpec{DatabaseRef: mooringv1.DatabaseReference{Name: "orders"}, Schedule: "0 3 * * *",
			BackupPath: "/nightly", Storage: mooringv1.BackupStorage{ExistingClaim: "backups"}},
	}
	if err := env.Client.Create(ctx, backup); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, dump string
		succeed    bool
	}{
		{"newest", "", true},
		{"named", "orders-nightly-20260101T030000Z.sql.gz", true},
		{"broken", "orders-nightly-20260102T030000Z.sql.gz", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			db := createDB(t, ns, c.name, v1beta1.PostgreSQL, func(d *v1beta1.DatabaseCluster) {
				d.Spec.ReplicaCount = 1
				d.Spec.Bootstrap = &v1beta1.BootstrapSpec{Backup: &v1beta1.BootstrapBackup{Name: backup.Name, Dump: c.dump}}
			})
			key := client.ObjectKeyFromObject(db)
			live := &v1beta1.DatabaseCluster{}
			testutil.WaitFor(t, env.Client, key, live, "Restored waiting for the primary", func(d *v1beta1.DatabaseCluster) error {
				if r := condition(d, v1beta1.ConditionRestored); r == nil || r.Reason != v1beta1.ReasonWaitingToRestore {
					return fmt.Errorf("Restored %+v", r)
				}
				return nil
			})
			testutil.MarkStatefulSetReady(t, env.Client, key)
			jobKey := types.NamespacedName{Namespace: ns, Name: database.RestoreJobName(db)}
			testutil.WaitFor(t, env.Client, jobKey, &batchv1.Job{}, "restore Job", func(j *batchv1.Job) error {
				pod := j.Spec.Template.Spec
				env := map[string]string{}
				for _, e := range pod.Containers[0].Env {
					env[e.Name] = e.Value
				}
				wantFile := ""
				if c.dump != "" {
					wantFile = "/backup-volume/nightly/" + c.dump
				}
				readOnly := slices.ContainsFunc(pod.Containers[0].VolumeMounts, func(m corev1.VolumeMount) bool {
					return m.Name == pod.Volumes[0].Name && m.ReadOnly
				})
				if env["RESTORE_FILE"] != wantFile || env["RESTORE_OWNER"] != backup.Name || pod.Volumes[0].PersistentVolumeClaim == nil ||
					pod.Volumes[0].PersistentVolumeClaim.ClaimName != "backups" || !readOnly {
					return fmt.Errorf("env %v volumes %+v mounts %+v: want the dump %q of Backup %s from claim backups, read-only",
						env, pod.Volumes, pod.Containers[0].VolumeMounts, wantFile, backup.Name)
				}
				if !slices.ContainsFunc(pod.Containers[0].Env, func(e corev1.EnvVar) bool {
					return e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && e.ValueFrom.SecretKeyRef.Name == c.name+"-admin"
				}) {
					return fmt.Errorf("env %+v: the superuser's password does not come from the admin Secret", pod.Containers[0].Env)
				}
				return nil
			})
			testutil.WaitFor(t, env.Client, key, live, "not Running while restoring", func(d *v1beta1.DatabaseCluster) error {
				if d.Status.Phase == v1beta1.DatabaseRunning || condition(d, v1beta1.ConditionRestored).Reason != v1beta1.ReasonRestoring {
					return fmt.Errorf("phase %s, Restored %+v", d.Status.Phase, condition(d, v1beta1.ConditionRestored))
				}
				return nil
			})
			testutil.FinishJob(t, env.Client, jobKey, c.succeed)
			if !c.succeed {
				testutil.WaitFor(t, env.Client, key, live, "Restored False RestoreFailed", func(d *v1beta1.DatabaseCluster) error {
					if r := condition(d, v1beta1.ConditionRestored); r == nil || r.Reason != v1beta1.ReasonRestoreFailed || d.Status.RestoredFrom != nil ||
						d.Status.Phase == v1beta1.DatabaseRunning {
						return fmt.Errorf("phase %s, Restored %+v, restoredFrom %+v", d.Status.Phase, r, d.Status.RestoredFrom)
					}
					return nil
				})
				testutil.WaitEvent(t, env.Client, ns, corev1.EventTypeWarning, v1beta1.ReasonRestoreFailed, db.Name)
				return
			}
			testutil.WaitFor(t, env.Client, key, live, "restoredFrom and Running", func(d *v1beta1.DatabaseCluster) error {
				rf := d.Status.RestoredFrom
				if rf == nil || rf.Backup != backup.Name || rf.Dump != c.dump || d.Status.Phase != v1beta1.DatabaseRunning ||
					condition(d, v1beta1.ConditionRestored).Status != metav1.ConditionTrue {
					return fmt.Errorf("phase %s, restoredFrom %+v, Restored %+v", d.Status.Phase, rf, condition(d, v1beta1.ConditionRestored))
				}
				return nil
			})
			// No second restore: the Job that succeeded is the only one, and stays.
			j := &batchv1.Job{}
			if err := env.Client.Get(ctx, jobKey, j); err != nil || j.Status.Succeeded != 1 {
				t.Fatalf("restore Job after success: %v %+v, want the succeeded one kept", err, j.Status)
			}
		})
	}
}
