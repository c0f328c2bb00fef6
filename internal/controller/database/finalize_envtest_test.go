package database_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/api/v1beta1"
	"github.com/mooringhq/mooring/internal/controller/database"
	"github.com/mooringhq/mooring/internal/testutil"
)

// markRunning plays the StatefulSet controller so the cluster reaches Running.
func markRunning(t *testing.T, db *v1beta1.DatabaseCluster) {
	t.Helper()
	key := client.ObjectKeyFromObject(db)
	testutil.MarkStatefulSetReady(t, env.Client, key)
	testutil.WaitFor(t, env.Client, key, &v1beta1.DatabaseCluster{}, "Running", func(d *v1beta1.DatabaseCluster) error {
		if d.Status.Phase != v1beta1.DatabaseRunning {
			return fmt.Errorf("phase %s", d.Status.Phase)
		}
		return nil
	})
}

// createDataClaim plays the StatefulSet controller: it creates the primary's data PVC from
// the claim template, without which a final snapshot has nothing to dump.
func createDataClaim(t *testing.T, db *v1beta1.DatabaseCluster) (*appsv1.StatefulSet, *corev1.PersistentVolumeClaim) {
	t.Helper()
	sts := &appsv1.StatefulSet{}
	testutil.WaitFor(t, env.Client, client.ObjectKeyFromObject(db), sts, "StatefulSet", func(*appsv1.StatefulSet) error { return nil })
	tpl := sts.Spec.VolumeClaimTemplates[0]
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: database.PrimaryClaimName(db), Namespace: db.Namespace, Labels: tpl.Labels},
		Spec:       tpl.Spec,
	}
	if err := env.Client.Create(ctx, pvc); err != nil {
		t.Fatal(err)
	}
	return sts, pvc
}

// bindClaim reports pvc Bound at size, as a volume provisioner would.
func bindClaim(t *testing.T, pvc *corev1.PersistentVolumeClaim, size string) {
	t.Helper()
	pvc.Status = corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound,
		Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}}
	if err := env.Client.Status().Update(ctx, pvc); err != nil {
		t.Fatal(err)
	}
}

// waitForSnapshotFinalizer waits until the cluster carries the final-snapshot finalizer.
func waitForSnapshotFinalizer(t *testing.T, key client.ObjectKey) {
	t.Helper()
	testutil.WaitFor(t, env.Client, key, &v1beta1.DatabaseCluster{}, "final-snapshot finalizer", func(d *v1beta1.DatabaseCluster) error {
		if !slicesContains(d.Finalizers, v1beta1.FinalSnapshotFinalizer) {
			return fmt.Errorf("finalizers %v", d.Finalizers)
		}
		return nil
	})
}

func jobEnv(j *batchv1.Job, name string) string {
	for _, e := range j.Spec.Template.Spec.Containers[0].Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

// Deleting a cluster with deletionPolicy Snapshot runs a final dump into the volume of a
// Backup of the cluster, and lets the cluster go only once that Job has succeeded.
func TestFinalSnapshotIntoBackupVolume(t *testing.T) {
	ns := env.Namespace(t)
	db := createDB(t, ns, "orders", v1beta1.PostgreSQL, func(d *v1beta1.DatabaseCluster) {
		d.Spec.ReplicaCount = 1
		d.Spec.DeletionPolicy = v1beta1.DeletionSnapshot
	})
	key := client.ObjectKeyFromObject(db)
	waitForSnapshotFinalizer(t, key)
	markRunning(t, db)
	createDataClaim(t, db)
	b := &mooringv1.Backup{
		ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: ns},
		Spec: mooringv1.BackupSpec{DatabaseRef: mooringv1.DatabaseReference{Name: "orders"}, Schedule: "@daily",
			BackupPath: "/orders"},
	}
	if err := env.Client.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, env.Client, types.NamespacedName{Namespace: ns, Name: "nightly-storage"}, &corev1.PersistentVolumeClaim{},
		"the Backup's volume", func(*corev1.PersistentVolumeClaim) error { return nil })

	if err := env.Client.Delete(ctx, db); err != nil {
		t.Fatal(err)
	}
	jobKey := types.NamespacedName{Namespace: ns, Name: "orders-final-snapshot"}
	job := &batchv1.Job{}
	testutil.WaitFor(t, env.Client, jobKey, job, "final snapshot Job", func(*batchv1.Job) error { return nil })
	// No owner reference to the cluster being deleted, which the garbage collector would
	// follow under foreground deletion: the cluster's UID says whose Job it is.
	if len(job.OwnerReferences) != 0 || job.Annotations[mooringv1.FinalizingUIDAnnotation] != string(db.UID) {
		t.Errorf("snapshot Job owners %v annotations %v, want no owner and the cluster's UID", job.OwnerReferences, job.Annotations)
	}
	if claim := job.Spec.Template.Spec.Volumes[0].PersistentVolumeClaim.ClaimName; claim != "nightly-storage" ||
		jobEnv(job, "BACKUP_DIR") != "/backup-volume/orders" || jobEnv(job, "DUMP_PREFIX") != "final-snapshot-orders-" || jobEnv(job, "KEEP_LAST") != "0" {
		t.Errorf("snapshot into claim %s dir %s prefix %s keep %s, want the Backup's volume and path",
			claim, jobEnv(job, "BACKUP_DIR"), jobEnv(job, "DUMP_PREFIX"), jobEnv(job, "KEEP_LAST"))
	}
	testutil.WaitFor(t, env.Client, key, &v1beta1.DatabaseCluster{}, "phase Deleting, FinalSnapshot in progress", func(d *v1beta1.DatabaseCluster) error {
		c := condition(d, v1beta1.ConditionFinalSnapshot)
		if d.Status.Phase != v1beta1.DatabaseDeleting || c == nil || c.Reason != v1beta1.ReasonSnapshotInProgress || !strings.Contains(c.Message, jobKey.Name) {
			return fmt.Errorf("phase %s FinalSnapshot %+v", d.Status.Phase, c)
		}
		return nil
	})
	testutil.WaitEvent(t, env.Client, ns, corev1.EventTypeNormal, "Finalizing", "orders")

	testutil.FinishJob(t, env.Client, jobKey, true)
	testutil.WaitGone(t, env.Client, key, &v1beta1.DatabaseCluster{}, "the cluster deleted after its final snapshot")
	testutil.WaitGone(t, env.Client, jobKey, &batchv1.Job{}, "the snapshot Job deleted once its outcome was read")
}

// Foreground deletion would have the garbage collector delete the StatefulSet and its pods
// while the final-snapshot finalizer holds the cluster, leaving nothing to dump: it is
// refused, naming the ways out, and a background deletion then takes the snapshot.
func TestFinalSnapshotRefusesForegroundDeletion(t *testing.T) {
	ns := env.Namespace(t)
	db := createDB(t, ns, "ledger", v1beta1.PostgreSQL, func(d *v1beta1.DatabaseCluster) {
		d.Spec.ReplicaCount = 1
		d.Spec.DeletionPolicy = v1beta1.DeletionSnapshot
	})
	key := client.ObjectKeyFromObject(db)
	waitForSnapshotFinalizer(t, key)
	markRunning(t, db)
	createDataClaim(t, db)

	err := env.Client.Delete(ctx, db, client.PropagationPolicy(metav1.DeletePropagationForeground))
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "--cascade=background") ||
		!strings.Contains(err.Error(), database.SkipFinalSnapshotAnnotation) {
		t.Fatalf("foreground delete of a cluster with deletionPolicy Snapshot: %v, want Forbidden naming background deletion and the skip annotation", err)
	}
	got := &v1beta1.DatabaseCluster{}
	if err := env.Client.Get(ctx, key, got); err != nil || got.DeletionTimestamp != nil {
		t.Fatalf("after the refused delete: %v, deletionTimestamp %v", err, got.DeletionTimestamp)
	}

	if err := env.Client.Delete(ctx, db, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		t.Fatal(err)
	}
	jobKey := types.NamespacedName{Namespace: ns, Name: "ledger-final-snapshot"}
	testutil.WaitFor(t, env.Client, jobKey, &batchv1.Job{}, "final snapshot Job", func(*batchv1.Job) error { return nil })
	testutil.FinishJob(t, env.Client, jobKey, true)
	testutil.WaitGone(t, env.Client, key, &v1beta1.DatabaseCluster{}, "the cluster deleted after its final snapshot")
}

// A failed snapshot keeps the cluster, with a Warning event and a condition; the skip
// annotation lets it go. Without a Backup, the snapshot goes to a PVC of its own.
func TestFinalSnapshotFailureAndSkip(t *testing.T) {
	ns := env.Namespace(t)
	db := createDB(t, ns, "legacy", v1beta1.MySQL, func(d *v1beta1.DatabaseCluster) {
		d.Spec.ReplicaCount = 1
		d.Spec.DeletionPolicy = v1beta1.DeletionSnapshot
	})
	key := client.ObjectKeyFromObject(db)
	markRunning(t, db)
	createDataClaim(t, db)
	if err := env.Client.Delete(ctx, db); err != nil {
		t.Fatal(err)
	}
	jobKey := types.NamespacedName{Namespace: ns, Name: "legacy-final-snapshot"}
	job := &batchv1.Job{}
	testutil.WaitFor(t, env.Client, jobKey, job, "final snapshot Job", func(*batchv1.Job) error { return nil })
	if claim := job.Spec.Template.Spec.Volumes[0].PersistentVolumeClaim.ClaimName; claim != "legacy-final-snapshot" ||
		job.Spec.Template.Spec.Containers[0].Image != "docker.io/library/mysql:8.4" {
		t.Errorf("snapshot claim %s image %s", claim, job.Spec.Template.Spec.Containers[0].Image)
	}
	pvc := &corev1.PersistentVolumeClaim{}
	testutil.WaitFor(t, env.Client, types.NamespacedName{Namespace: ns, Name: "legacy-final-snapshot"}, pvc, "the snapshot's own PVC",
		func(p *corev1.PersistentVolumeClaim) error {
			if len(p.OwnerReferences) != 0 {
				return fmt.Errorf("owners %v: the snapshot must outlive the cluster", p.OwnerReferences)
			}
			return nil
		})

	testutil.FinishJob(t, env.Client, jobKey, false)
	testutil.WaitEvent(t, env.Client, ns, corev1.EventTypeWarning, v1beta1.ReasonSnapshotFailed, "legacy")
	testutil.WaitFor(t, env.Client, key, &v1beta1.DatabaseCluster{}, "FinalSnapshot=False naming the way out", func(d *v1beta1.DatabaseCluster) error {
		c := condition(d, v1beta1.ConditionFinalSnapshot)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1beta1.ReasonSnapshotFailed ||
			!strings.Contains(c.Message, database.SkipFinalSnapshotAnnotation) || !slicesContains(d.Finalizers, v1beta1.FinalSnapshotFinalizer) {
			return fmt.Errorf("FinalSnapshot %+v finalizers %v", c, d.Finalizers)
		}
		return nil
	})
	// More reconciles do not let it go.
	testutil.Update(t, env.Client, key, &v1beta1.DatabaseCluster{}, func(d *v1beta1.DatabaseCluster) {
		d.Annotations = map[string]string{"example.com/poke": "1"}
	})
	testutil.Settle(t)
	if err := env.Client.Get(ctx, key, &v1beta1.DatabaseCluster{}); err != nil {
		t.Fatalf("the cluster went although its snapshot failed: %v", err)
	}

	testutil.Update(t, env.Client, key, &v1beta1.DatabaseCluster{}, func(d *v1beta1.DatabaseCluster) {
		d.Annotations = map[string]string{database.SkipFinalSnapshotAnnotation: "true"}
	})
	testutil.WaitGone(t, env.Client, key, &v1beta1.DatabaseCluster{}, "the cluster deleted without a snapshot")
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(pvc), pvc); err != nil || pvc.DeletionTimestamp != nil {
		t.Errorf("the snapshot PVC after the cluster went: %v (deletion %v)", err, pvc.DeletionTimestamp)
	}
}

// Every cluster carries one finalizer for its deletionPolicy, added once: the volumes
// finalizer under Retain and Delete, which lets the cluster go at once (no Job), and the
// final-snapshot finalizer under Snapshot. A change of policy swaps them.
func TestFinalizerPerDeletionPolicy(t *testing.T) {
	ns := env.Namespace(t)
	for _, policy := range []v1beta1.DeletionPolicy{v1beta1.DeletionRetain, v1beta1.DeletionDelete} {
		db := createDB(t, ns, strings.ToLower(string(policy)), v1beta1.PostgreSQL, func(d *v1beta1.DatabaseCluster) { d.Spec.DeletionPolicy = policy })
		key := client.ObjectKeyFromObject(db)
		testutil.WaitFor(t, env.Client, key, &v1beta1.DatabaseCluster{}, string(policy)+": the volumes finalizer", func(d *v1beta1.DatabaseCluster) error {
			if len(d.Finalizers) != 1 || d.Finalizers[0] != v1beta1.VolumesFinalizer {
				return fmt.Errorf("finalizers %v", d.Finalizers)
			}
			return nil
		})
		if err := env.Client.Delete(ctx, db); err != nil {
			t.Fatal(err)
		}
		testutil.WaitGone(t, env.Client, key, &v1beta1.DatabaseCluster{}, string(policy)+" cluster deleted")
		if err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: key.Name + "-final-snapshot"}, &batchv1.Job{}); err == nil {
			t.Errorf("%s: a final snapshot Job", policy)
		}
	}
	db := createDB(t, ns, "switch", v1beta1.PostgreSQL, nil)
	key := client.ObjectKeyFromObject(db)
	for _, step := range []struct {
		policy v1beta1.DeletionPolicy
		want   string
	}{{v1beta1.DeletionSnapshot, v1beta1.FinalSnapshotFinalizer}, {v1beta1.DeletionRetain, v1beta1.VolumesFinalizer}} {
		testutil.Update(t, env.Client, key, &v1beta1.DatabaseCluster{}, func(d *v1beta1.DatabaseCluster) { d.Spec.DeletionPolicy = step.policy })
		testutil.WaitFor(t, env.Client, key, &v1beta1.DatabaseCluster{}, fmt.Sprintf("finalizer %s under %s", step.want, step.policy), func(d *v1beta1.DatabaseCluster) error {
			if len(d.Finalizers) != 1 || d.Finalizers[0] != step.want {
				return errors.New(strings.Join(d.Finalizers, ","))
			}
			return nil
		})
	}
}

// ownedBy reports whether refs include one to the StatefulSet sts.
func ownedBy(refs []metav1.OwnerReference, sts *appsv1.StatefulSet) bool {
	for _, r := range refs {
		if r.UID == sts.UID {
			return true
		}
	}
	return false
}

// giveClaimToStatefulSet plays the StatefulSet controller under whenDeleted Delete: the
// data PVC gets an owner reference to the StatefulSet, which the garbage collector
// follows when the StatefulSet goes.
func giveClaimToStatefulSet(t *testing.T, sts *appsv1.StatefulSet, pvc *corev1.PersistentVolumeClaim) {
	t.Helper()
	testutil.Update(t, env.Client, client.ObjectKeyFromObject(pvc), &corev1.PersistentVolumeClaim{}, func(p *corev1.PersistentVolumeClaim) {
		p.OwnerReferences = append(p.OwnerReferences, metav1.OwnerReference{
			APIVersion: "apps/v1", Kind: "StatefulSet", Name: sts.Name, UID: sts.UID,
		})
	})
}

// A cluster created with deletionPolicy Delete, paused (Sync no longer runs), switched to
// Retain and deleted: the StatefulSet was never told, and the garbage collector would take
// the volumes with it. The volumes finalizer sets the live StatefulSet to Retain and takes
// the PVCs from it before the cluster goes. The same holds without the pause, when the
// deletion follows the change at once.
func TestRetainHonouredAtDeletion(t *testing.T) {
	for name, paused := range map[string]bool{"paused": true, "at-once": false} {
		t.Run(name, func(t *testing.T) {
			ns := env.Namespace(t)
			db := createDB(t, ns, "orders", v1beta1.PostgreSQL, func(d *v1beta1.DatabaseCluster) {
				d.Spec.ReplicaCount = 1
				d.Spec.DeletionPolicy = v1beta1.DeletionDelete
			})
			key := client.ObjectKeyFromObject(db)
			sts, pvc := createDataClaim(t, db)
			if p := sts.Spec.PersistentVolumeClaimRetentionPolicy; p == nil || p.WhenDeleted != appsv1.DeletePersistentVolumeClaimRetentionPolicyType {
				t.Fatalf("StatefulSet retention %+v under deletionPolicy Delete", p)
			}
			giveClaimToStatefulSet(t, sts, pvc)
			testutil.WaitFor(t, env.Client, key, &v1beta1.DatabaseCluster{}, "the volumes finalizer", func(d *v1beta1.DatabaseCluster) error {
				if !slicesContains(d.Finalizers, v1beta1.VolumesFinalizer) {
					return fmt.Errorf("finalizers %v", d.Finalizers)
				}
				return nil
			})
			if paused {
				testutil.Update(t, env.Client, key, &v1beta1.DatabaseCluster{}, func(d *v1beta1.DatabaseCluster) {
					d.Annotations = map[string]string{mooringv1.PausedAnnotation: "true"}
				})
				testutil.WaitFor(t, env.Client, key, &v1beta1.DatabaseCluster{}, "Paused", func(d *v1beta1.DatabaseCluster) error {
					if c := condition(d, mooringv1.ConditionPaused); c == nil || c.Status != metav1.ConditionTrue {
						return fmt.Errorf("Paused %+v", c)
					}
					return nil
				})
			}
			testutil.Update(t, env.Client, key, &v1beta1.DatabaseCluster{}, func(d *v1beta1.DatabaseCluster) {
				d.Spec.DeletionPolicy = v1beta1.DeletionRetain
			})
			if err := env.Client.Delete(ctx, db); err != nil {
				t.Fatal(err)
			}
			// Gone means its finalizer was released: by then the volumes must be safe.
			testutil.WaitGone(t, env.Client, key, &v1beta1.DatabaseCluster{}, "the cluster deleted")
			live := &appsv1.StatefulSet{}
			if err := env.Client.Get(ctx, key, live); err != nil {
				t.Fatal(err)
			}
			if p := live.Spec.PersistentVolumeClaimRetentionPolicy; p == nil || p.WhenDeleted != appsv1.RetainPersistentVolumeClaimRetentionPolicyType {
				t.Errorf("StatefulSet retention %+v when the cluster was released, want whenDeleted Retain", p)
			}
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(pvc), pvc); err != nil {
				t.Fatal(err)
			}
			if ownedBy(pvc.OwnerReferences, live) {
				t.Errorf("PVC %s still owned by the StatefulSet (%v): the garbage collector would delete it with it", pvc.Name, pvc.OwnerReferences)
			}
		})
	}
}

// Under deletionPolicy Delete the volumes go with the StatefulSet: Finalize leaves the
// StatefulSet's owner reference on the PVCs for the garbage collector.
func TestDeletePolicyLeavesVolumesToTheStatefulSet(t *testing.T) {
	ns := env.Namespace(t)
	db := createDB(t, ns, "scratch", v1beta1.PostgreSQL, func(d *v1beta1.DatabaseCluster) {
		d.Spec.ReplicaCount = 1
		d.Spec.DeletionPolicy = v1beta1.DeletionDelete
	})
	key := client.ObjectKeyFromObject(db)
	sts, pvc := createDataClaim(t, db)
	giveClaimToStatefulSet(t, sts, pvc)
	testutil.WaitFor(t, env.Client, key, &v1beta1.DatabaseCluster{}, "the volumes finalizer", func(d *v1beta1.DatabaseCluster) error {
		if !slicesContains(d.Finalizers, v1beta1.VolumesFinalizer) {
			return fmt.Errorf("finalizers %v", d.Finalizers)
		}
		return nil
	})
	if err := env.Client.Delete(ctx, db); err != nil {
		t.Fatal(err)
	}
	testutil.WaitGone(t, env.Client, key, &v1beta1.DatabaseCluster{}, "the cluster deleted")
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(pvc), pvc); err != nil || !ownedBy(pvc.OwnerReferences, sts) {
		t.Errorf("PVC %s owners %v (%v): want it still owned by the StatefulSet", pvc.Name, pvc.OwnerReferences, err)
	}
}

// A cluster whose primary never got a data volume (or lost it) has nothing to snapshot:
// it is deleted at once, with a Warning event, and no snapshot Job waits for a database
// that never comes.
func TestFinalSnapshotWithoutData(t *testing.T) {
	ns := env.Namespace(t)
	db := createDB(t, ns, "empty", v1beta1.PostgreSQL, func(d *v1beta1.DatabaseCluster) {
		d.Spec.ReplicaCount = 1
		d.Spec.DeletionPolicy = v1beta1.DeletionSnapshot
	})
	key := client.ObjectKeyFromObject(db)
	waitForSnapshotFinalizer(t, key)
	if err := env.Client.Delete(ctx, db); err != nil {
		t.Fatal(err)
	}
	testutil.WaitGone(t, env.Client, key, &v1beta1.DatabaseCluster{}, "the cluster deleted without data to snapshot")
	e := testutil.WaitEvent(t, env.Client, ns, corev1.EventTypeWarning, v1beta1.ReasonNothingToSnapshot, "empty")
	if !strings.Contains(e.Note, "data-empty-0") {
		t.Errorf("event %q does not name the missing PVC", e.Note)
	}
	jobKey := types.NamespacedName{Namespace: ns, Name: "empty-final-snapshot"}
	if err := env.Client.Get(ctx, jobKey, &batchv1.Job{}); err == nil {
		t.Error("a final snapshot Job was created for a cluster without data")
	}
	if err := env.Client.Get(ctx, jobKey, &corev1.PersistentVolumeClaim{}); err == nil {
		t.Error("a final snapshot PVC was created for a cluster without data")
	}
}
