package backup_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/api/v1beta1"
	"github.com/mooringhq/mooring/internal/controller/backup"
	"github.com/mooringhq/mooring/internal/engine"
	"github.com/mooringhq/mooring/internal/testutil"
)

var ctx = context.Background()

func createBackup(t *testing.T, ns, name, db string, mutate func(*mooringv1.Backup)) *mooringv1.Backup {
	t.Helper()
	b := &mooringv1.Backup{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       mooringv1.BackupSpec{DatabaseRef: mooringv1.DatabaseReference{Name: db}, Schedule: "0 3 * * *"},
	}
	if mutate != nil {
		mutate(b)
	}
	if err := env.Client.Create(ctx, b); err != nil {
		t.Fatalf("create Backup: %v", err)
	}
	return b
}

func createDB(t *testing.T, ns, name string) *v1beta1.DatabaseCluster {
	t.Helper()
	db := &v1beta1.DatabaseCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       v1beta1.DatabaseClusterSpec{Engine: v1beta1.PostgreSQL, ReplicaCount: 1},
	}
	if err := env.Client.Create(ctx, db); err != nil {
		t.Fatalf("create DatabaseCluster: %v", err)
	}
	return db
}

// makeRunning plays the StatefulSet controller: envtest runs none, so the database's pods
// become ready only when the test says so.
func makeRunning(t *testing.T, db *v1beta1.DatabaseCluster) {
	t.Helper()
	key := client.ObjectKeyFromObject(db)
	testutil.MarkStatefulSetReady(t, env.Client, key)
	testutil.WaitFor(t, env.Client, key, &v1beta1.DatabaseCluster{}, "DatabaseCluster Running", func(d *v1beta1.DatabaseCluster) error {
		if d.Status.Phase != v1beta1.DatabaseRunning {
			return fmt.Errorf("phase %q", d.Status.Phase)
		}
		return nil
	})
}

func waitReady(t *testing.T, key types.NamespacedName, status metav1.ConditionStatus, reason string, phase mooringv1.BackupPhase) *mooringv1.Backup {
	t.Helper()
	b := &mooringv1.Backup{}
	testutil.WaitFor(t, env.Client, key, b, fmt.Sprintf("Backup Ready=%s %s, phase %s", status, reason, phase), func(b *mooringv1.Backup) error {
		c := meta.FindStatusCondition(b.Status.Conditions, mooringv1.ConditionReady)
		if c == nil || c.Status != status || c.Reason != reason || b.Status.Phase != phase {
			return fmt.Errorf("Ready %+v phase %q", c, b.Status.Phase)
		}
		return nil
	})
	return b
}

func listJobs(t *testing.T, ns string, labels map[string]string) []batchv1.Job {
	t.Helper()
	jobs := &batchv1.JobList{}
	if err := env.Client.List(ctx, jobs, client.InNamespace(ns), client.MatchingLabels(labels)); err != nil {
		t.Fatal(err)
	}
	return jobs.Items
}

// waitReconciles waits until the Backup controller has reconciled n more times, so that a
// test can check that something did not happen.
func waitReconciles(t *testing.T, n int, change func()) {
	t.Helper()
	before := testutil.ReconcileCount(t, backup.Component)
	change()
	testutil.Eventually(t, testutil.DefaultTimeout, fmt.Sprintf("%d reconciles of Backups", n), func() error {
		if got := testutil.ReconcileCount(t, backup.Component) - before; got < float64(n) {
			return fmt.Errorf("%v reconciles", got)
		}
		return nil
	})
}

// A Backup of a database that does not exist, then is not Running, waits with a condition
// and a Warning event and creates nothing; it starts, through the DatabaseCluster watch,
// as soon as the database is Running. A converged Backup then costs no write.
func TestBackupWaitsForRunningDatabase(t *testing.T) {
	ns := env.Namespace(t)
	b := createBackup(t, ns, "nightly", "orders", nil)
	key := client.ObjectKeyFromObject(b)
	got := waitReady(t, key, metav1.ConditionFalse, mooringv1.ReasonDatabaseNotFound, mooringv1.BackupPending)
	if c := meta.FindStatusCondition(got.Status.Conditions, mooringv1.ConditionReady); !strings.Contains(c.Message, "orders") {
		t.Errorf("message %q does not name the database", c.Message)
	}
	testutil.WaitEvent(t, env.Client, ns, corev1.EventTypeWarning, mooringv1.ReasonDatabaseNotFound, "nightly")

	db := createDB(t, ns, "orders")
	waitReady(t, key, metav1.ConditionFalse, mooringv1.ReasonDatabaseNotRunning, mooringv1.BackupPending)
	testutil.WaitEvent(t, env.Client, ns, corev1.EventTypeWarning, mooringv1.ReasonDatabaseNotRunning, "nightly")
	for _, obj := range []client.Object{&batchv1.CronJob{}, &corev1.PersistentVolumeClaim{}} {
		name := map[bool]string{true: "nightly", false: "nightly-storage"}[isCronJob(obj)]
		if err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, obj); !apierrors.IsNotFound(err) {
			t.Fatalf("%T %s exists before the database is Running (err %v)", obj, name, err)
		}
	}

	makeRunning(t, db)
	cj := &batchv1.CronJob{}
	testutil.WaitFor(t, env.Client, key, cj, "CronJob nightly", func(c *batchv1.CronJob) error {
		if !metav1.IsControlledBy(c, b) || c.Spec.Schedule != "0 3 * * *" || c.Spec.ConcurrencyPolicy != batchv1.ForbidConcurrent {
			return fmt.Errorf("owners %v schedule %q policy %s", c.OwnerReferences, c.Spec.Schedule, c.Spec.ConcurrencyPolicy)
		}
		return nil
	})
	pod := cj.Spec.JobTemplate.Spec.Template.Spec
	if pod.Containers[0].Image != "docker.io/library/postgres:18" || pod.Volumes[0].PersistentVolumeClaim.ClaimName != "nightly-storage" {
		t.Errorf("dump pod image %s volume %+v", pod.Containers[0].Image, pod.Volumes[0])
	}
	testutil.WaitFor(t, env.Client, types.NamespacedName{Namespace: ns, Name: "nightly-storage"}, &corev1.PersistentVolumeClaim{}, "PVC nightly-storage",
		func(p *corev1.PersistentVolumeClaim) error {
			if len(p.OwnerReferences) != 0 {
				return fmt.Errorf("owners %v: the volume must outlive the Backup", p.OwnerReferences)
			}
			if got := p.Spec.Resources.Requests[corev1.ResourceStorage]; got.String() != "5Gi" {
				return fmt.Errorf("size %s", got.String())
			}
			return nil
		})
	got = waitReady(t, key, metav1.ConditionTrue, mooringv1.ReasonScheduled, mooringv1.BackupScheduled)
	if got.Spec.BackupPath != "/backups" || got.Spec.Retention.KeepLast != 7 || got.Spec.CleanupPolicy != mooringv1.CleanupRetain || len(got.Finalizers) != 0 {
		t.Errorf("defaults %+v finalizers %v", got.Spec, got.Finalizers)
	}
	if got.Status.ObservedGeneration != got.Generation {
		t.Errorf("observedGeneration %d, generation %d", got.Status.ObservedGeneration, got.Generation)
	}

	out := env.Kubectl(t, "get", "backups", "-n", ns)
	if header := strings.Join(strings.Fields(strings.SplitN(out, "\n", 2)[0]), " "); header != "NAME DATABASE SCHEDULE LAST SUCCESS PHASE AGE" {
		t.Errorf("kubectl get backups columns %q", header)
	}
	testutil.ExpectNoWrites(t, backup.Component, 1, func() {
		testutil.Update(t, env.Client, key, &mooringv1.Backup{}, func(b *mooringv1.Backup) {
			b.Annotations = map[string]string{"example.com/touched": "yes"}
		})
	})
}

func isCronJob(o client.Object) bool { _, ok := o.(*batchv1.CronJob); return ok }

// Status comes from the Jobs, including those the CronJob creates (owned by the CronJob,
// found by the job template's labels) and the CronJob's own status.
func TestBackupStatusFromJobs(t *testing.T) {
	ns := env.Namespace(t)
	db := createDB(t, ns, "orders")
	b := createBackup(t, ns, "nightly", "orders", nil)
	key := client.ObjectKeyFromObject(b)
	makeRunning(t, db)
	cj := &batchv1.CronJob{}
	testutil.WaitFor(t, env.Client, key, cj, "CronJob", func(*batchv1.CronJob) error { return nil })

	// Play the CronJob controller: a Job from the template, owned by the CronJob.
	scheduled := func(name string) types.NamespacedName {
		j := &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: cj.Spec.JobTemplate.Labels,
				OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(cj, batchv1.SchemeGroupVersion.WithKind("CronJob"))}},
			Spec: cj.Spec.JobTemplate.Spec,
		}
		if err := env.Client.Create(ctx, j); err != nil {
			t.Fatal(err)
		}
		return client.ObjectKeyFromObject(j)
	}
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	cj.Status.LastScheduleTime = &now
	if err := env.Client.Status().Update(ctx, cj); err != nil {
		t.Fatal(err)
	}
	first := scheduled("nightly-29000001")
	testutil.WaitFor(t, env.Client, key, &mooringv1.Backup{}, "lastScheduleTime and lastBackupJob", func(b *mooringv1.Backup) error {
		if !b.Status.LastScheduleTime.Equal(&now) || b.Status.LastBackupJob != first.Name {
			return fmt.Errorf("lastScheduleTime %v lastBackupJob %q", b.Status.LastScheduleTime, b.Status.LastBackupJob)
		}
		return nil
	})
	testutil.FinishJob(t, env.Client, first, true)
	testutil.WaitFor(t, env.Client, key, &mooringv1.Backup{}, "lastSuccessfulTime and LastBackupSucceeded=True", func(b *mooringv1.Backup) error {
		c := meta.FindStatusCondition(b.Status.Conditions, mooringv1.ConditionLastBackupSucceeded)
		if b.Status.LastSuccessfulTime == nil || c == nil || c.Status != metav1.ConditionTrue || b.Status.Phase != mooringv1.BackupScheduled {
			return fmt.Errorf("lastSuccessfulTime %v LastBackupSucceeded %+v phase %s", b.Status.LastSuccessfulTime, c, b.Status.Phase)
		}
		return nil
	})

	second := scheduled("nightly-29000002")
	testutil.FinishJob(t, env.Client, second, false)
	got := waitReady(t, key, metav1.ConditionFalse, mooringv1.ReasonBackupFailed, mooringv1.BackupFailed)
	c := meta.FindStatusCondition(got.Status.Conditions, mooringv1.ConditionLastBackupSucceeded)
	if got.Status.LastFailedTime == nil || got.Status.LastBackupJob != second.Name || c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, second.Name) {
		t.Errorf("lastFailedTime %v lastBackupJob %q LastBackupSucceeded %+v", got.Status.LastFailedTime, got.Status.LastBackupJob, c)
	}
	if e := testutil.WaitEvent(t, env.Client, ns, corev1.EventTypeWarning, mooringv1.ReasonBackupFailed, "nightly"); !strings.Contains(e.Note, second.Name) {
		t.Errorf("BackupFailed event %q does not name the Job", e.Note)
	}

	// Suspending reaches the CronJob; the phase says so.
	testutil.Update(t, env.Client, key, &mooringv1.Backup{}, func(b *mooringv1.Backup) { b.Spec.Suspend = true })
	testutil.WaitFor(t, env.Client, key, &batchv1.CronJob{}, "CronJob suspended", func(c *batchv1.CronJob) error {
		if c.Spec.Suspend == nil || !*c.Spec.Suspend {
			return errors.New("not suspended")
		}
		return nil
	})
	waitReady(t, key, metav1.ConditionTrue, mooringv1.ReasonSuspended, mooringv1.BackupSuspended)
}

// Each distinct value of the backup-now annotation starts exactly one Job.
func TestBackupNow(t *testing.T) {
	ns := env.Namespace(t)
	db := createDB(t, ns, "orders")
	b := createBackup(t, ns, "nightly", "orders", nil)
	key := client.ObjectKeyFromObject(b)
	makeRunning(t, db)
	waitReady(t, key, metav1.ConditionTrue, mooringv1.ReasonScheduled, mooringv1.BackupScheduled)
	manual := map[string]string{mooringv1.InstanceLabel: "nightly", mooringv1.BackupJobTypeLabel: backup.JobManual}
	if jobs := listJobs(t, ns, manual); len(jobs) != 0 {
		t.Fatalf("%d manual Jobs before any backup-now", len(jobs))
	}

	annotate := func(value, other string) {
		testutil.Update(t, env.Client, key, &mooringv1.Backup{}, func(b *mooringv1.Backup) {
			b.Annotations = map[string]string{mooringv1.BackupNowAnnotation: value, "example.com/other": other}
		})
	}
	annotate("2025-01-31T10:00", "a")
	name := backup.ManualJobName(b, "2025-01-31T10:00")
	testutil.WaitFor(t, env.Client, types.NamespacedName{Namespace: ns, Name: name}, &batchv1.Job{}, "manual Job "+name, func(j *batchv1.Job) error {
		if !metav1.IsControlledBy(j, b) || j.Annotations[mooringv1.BackupNowValueAnnotation] != "2025-01-31T10:00" {
			return fmt.Errorf("owners %v annotations %v", j.OwnerReferences, j.Annotations)
		}
		return nil
	})
	// The same value again, with reconciles in between: still one Job, even once it is done.
	testutil.FinishJob(t, env.Client, types.NamespacedName{Namespace: ns, Name: name}, true)
	waitReconciles(t, 2, func() { annotate("2025-01-31T10:00", "b") })
	waitReconciles(t, 1, func() { annotate("2025-01-31T10:00", "c") })
	if jobs := listJobs(t, ns, manual); len(jobs) != 1 {
		t.Fatalf("%d manual Jobs for one value, want 1", len(jobs))
	}
	testutil.WaitFor(t, env.Client, key, &mooringv1.Backup{}, "lastSuccessfulTime from the manual Job", func(b *mooringv1.Backup) error {
		if b.Status.LastSuccessfulTime == nil || b.Status.LastBackupJob != name {
			return fmt.Errorf("lastSuccessfulTime %v lastBackupJob %q", b.Status.LastSuccessfulTime, b.Status.LastBackupJob)
		}
		return nil
	})

	annotate("2025-02-01T10:00", "c")
	testutil.Eventually(t, testutil.DefaultTimeout, "a second manual Job for the new value", func() error {
		if jobs := listJobs(t, ns, manual); len(jobs) != 2 {
			return fmt.Errorf("%d manual Jobs", len(jobs))
		}
		return nil
	})
	waitReconciles(t, 1, func() { annotate("2025-02-01T10:00", "d") })
	if jobs := listJobs(t, ns, manual); len(jobs) != 2 {
		t.Fatalf("%d manual Jobs for two values, want 2", len(jobs))
	}

	// History is bounded: finished on-demand Jobs beyond ManualJobsHistory go (oldest
	// first, which timestamps of one-second resolution cannot show here); the current
	// value's Job stays whatever its age.
	values := []string{"2025-02-01T10:00", "v3", "v4", "v5", "v6"}
	for i, v := range values {
		if i > 0 {
			annotate(v, v)
		}
		jobKey := types.NamespacedName{Namespace: ns, Name: backup.ManualJobName(b, v)}
		testutil.WaitFor(t, env.Client, jobKey, &batchv1.Job{}, "manual Job for "+v, func(*batchv1.Job) error { return nil })
		testutil.FinishJob(t, env.Client, jobKey, true)
	}
	testutil.Eventually(t, testutil.DefaultTimeout, fmt.Sprintf("%d finished manual Jobs besides the current one", backup.ManualJobsHistory), func() error {
		jobs := listJobs(t, ns, manual)
		names := map[string]bool{}
		for _, j := range jobs {
			names[j.Name] = true
		}
		if len(jobs) != backup.ManualJobsHistory+1 || !names[backup.ManualJobName(b, "v6")] {
			return fmt.Errorf("%d manual Jobs: %v", len(jobs), names)
		}
		return nil
	})
}

// cleanupPolicy Delete: the Backup stays until a cleanup Job has removed the dumps; a
// failed cleanup is reported and blocks, and retrying (deleting the Job) lets it finish.
func TestCleanupPolicyDelete(t *testing.T) {
	ns := env.Namespace(t)
	db := createDB(t, ns, "orders")
	b := createBackup(t, ns, "nightly", "orders", func(b *mooringv1.Backup) { b.Spec.CleanupPolicy = mooringv1.CleanupDelete })
	key := client.ObjectKeyFromObject(b)
	makeRunning(t, db)
	testutil.WaitFor(t, env.Client, key, &mooringv1.Backup{}, "cleanup finalizer", func(b *mooringv1.Backup) error {
		if len(b.Finalizers) != 1 || b.Finalizers[0] != mooringv1.BackupCleanupFinalizer {
			return fmt.Errorf("finalizers %v", b.Finalizers)
		}
		return nil
	})
	claimKey := types.NamespacedName{Namespace: ns, Name: "nightly-storage"}
	testutil.WaitFor(t, env.Client, claimKey, &corev1.PersistentVolumeClaim{}, "PVC", func(*corev1.PersistentVolumeClaim) error { return nil })
	waitReady(t, key, metav1.ConditionTrue, mooringv1.ReasonScheduled, mooringv1.BackupScheduled)

	if err := env.Client.Delete(ctx, b); err != nil {
		t.Fatal(err)
	}
	jobKey := types.NamespacedName{Namespace: ns, Name: "nightly-cleanup"}
	job := &batchv1.Job{}
	testutil.WaitFor(t, env.Client, jobKey, job, "cleanup Job", func(*batchv1.Job) error { return nil })
	if len(job.OwnerReferences) != 0 || job.Annotations[mooringv1.FinalizingUIDAnnotation] != string(b.UID) {
		t.Errorf("cleanup Job owners %v annotations %v, want no owner and the Backup's UID", job.OwnerReferences, job.Annotations)
	}
	if c := job.Spec.Template.Spec.Containers[0]; !strings.Contains(c.Command[2], "rm -f") || c.Env[0].Value != "/backup-volume/backups" {
		t.Errorf("cleanup container %v %v", c.Command, c.Env)
	}
	testutil.WaitEvent(t, env.Client, ns, corev1.EventTypeNormal, engine.EventFinalizing, "nightly")
	waitReady(t, key, metav1.ConditionFalse, mooringv1.ReasonCleaningUp, mooringv1.BackupScheduled)
	testutil.WaitGone(t, env.Client, key, &batchv1.CronJob{}, "CronJob deleted before the cleanup")

	testutil.FinishJob(t, env.Client, jobKey, false)
	testutil.WaitEvent(t, env.Client, ns, corev1.EventTypeWarning, mooringv1.ReasonCleanupFailed, "nightly")
	waitReady(t, key, metav1.ConditionFalse, mooringv1.ReasonCleanupFailed, mooringv1.BackupFailed)
	waitReconciles(t, 1, func() {
		testutil.Update(t, env.Client, key, &mooringv1.Backup{}, func(b *mooringv1.Backup) { b.Annotations = map[string]string{"example.com/poke": "1"} })
	})
	if err := env.Client.Get(ctx, key, &mooringv1.Backup{}); err != nil {
		t.Fatalf("the Backup went although its cleanup failed: %v", err)
	}

	// Retry: the Job is deleted, a new one is made, and its success lets the Backup go.
	if err := env.Client.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, env.Client, jobKey, &batchv1.Job{}, "a new cleanup Job", func(j *batchv1.Job) error {
		if j.UID == job.UID {
			return errors.New("still the failed Job")
		}
		return nil
	})
	finishCleanup(t, jobKey, "foreign=0")
	testutil.WaitGone(t, env.Client, key, &mooringv1.Backup{}, "Backup deleted after its cleanup")
	testutil.WaitGone(t, env.Client, jobKey, &batchv1.Job{}, "the cleanup Job deleted once its outcome was read")
	// Mooring's volume is deleted too (envtest has no controller to drop its protection
	// finalizer, so it may stay with a deletion timestamp).
	testutil.Eventually(t, testutil.DefaultTimeout, "PVC nightly-storage deleted", func() error {
		p := &corev1.PersistentVolumeClaim{}
		if err := env.Client.Get(ctx, claimKey, p); apierrors.IsNotFound(err) {
			return nil
		} else if err != nil {
			return err
		}
		if p.DeletionTimestamp == nil {
			return errors.New("not deleted")
		}
		return nil
	})
}

// finishCleanup plays the Job controller and the kubelet for a cleanup Job that succeeds:
// its pod succeeds with report, what the cleanup script writes to its termination message,
// and the Job completes.
func finishCleanup(t *testing.T, jobKey types.NamespacedName, report string) {
	t.Helper()
	job := &batchv1.Job{}
	if err := env.Client.Get(ctx, jobKey, job); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: jobKey.Namespace, Name: jobKey.Name + "-x1",
			Labels: map[string]string{batchv1.ControllerUidLabel: string(job.UID), batchv1.JobNameLabel: job.Name}},
		Spec: job.Spec.Template.Spec,
	}
	if err := env.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	pod.Status = corev1.PodStatus{Phase: corev1.PodSucceeded, ContainerStatuses: []corev1.ContainerStatus{{
		Name: pod.Spec.Containers[0].Name, Image: pod.Spec.Containers[0].Image,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: 0, Reason: "Completed", Message: report, StartedAt: now, FinishedAt: now}},
	}}}
	if err := env.Client.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	testutil.FinishJob(t, env.Client, jobKey, true)
}

// A Backup's own volume may hold more than its dumps: a DatabaseCluster's final snapshot
// goes into the volume of a Backup that retains its dumps, which may later be switched to
// cleanupPolicy Delete. The cleanup keeps what is not the Backup's and says so; the volume
// is then kept, with a Warning event and an annotation on the claim that say why (and the
// Backup's Ready condition, for the moment before it goes). A cleanup whose report is
// missing keeps the volume too.
func TestCleanupKeepsAVolumeWithOtherFiles(t *testing.T) {
	ns := env.Namespace(t)
	db := createDB(t, ns, "orders")
	makeRunning(t, db)
	for _, tt := range []struct {
		name, report, want string
	}{
		{"nightly", "foreign=1\nbackups/final-snapshot-orders-20260101T000000Z.sql.gz", "final-snapshot-orders-20260101T000000Z.sql.gz"},
		{"weekly", "", "report of what is left in it is missing"},
	} {
		b := createBackup(t, ns, tt.name, "orders", func(b *mooringv1.Backup) { b.Spec.CleanupPolicy = mooringv1.CleanupDelete })
		key := client.ObjectKeyFromObject(b)
		claimKey := types.NamespacedName{Namespace: ns, Name: tt.name + "-storage"}
		testutil.WaitFor(t, env.Client, claimKey, &corev1.PersistentVolumeClaim{}, "PVC", func(*corev1.PersistentVolumeClaim) error { return nil })
		waitReady(t, key, metav1.ConditionTrue, mooringv1.ReasonScheduled, mooringv1.BackupScheduled)
		if err := env.Client.Delete(ctx, b); err != nil {
			t.Fatal(err)
		}
		jobKey := types.NamespacedName{Namespace: ns, Name: tt.name + "-cleanup"}
		job := &batchv1.Job{}
		testutil.WaitFor(t, env.Client, jobKey, job, "cleanup Job", func(*batchv1.Job) error { return nil })
		if e := plainEnv(job.Spec.Template.Spec.Containers[0]); e["VOLUME_ROOT"] != "/backup-volume" || e["REPORT_FILE"] != "/dev/termination-log" {
			t.Errorf("cleanup of the Backup's own volume does not report on the whole volume: %v", e)
		}
		if tt.report != "" {
			finishCleanup(t, jobKey, tt.report)
		} else {
			testutil.FinishJob(t, env.Client, jobKey, true)
		}
		testutil.WaitGone(t, env.Client, key, &mooringv1.Backup{}, "Backup deleted, its dumps removed")
		p := &corev1.PersistentVolumeClaim{}
		if err := env.Client.Get(ctx, claimKey, p); err != nil || p.DeletionTimestamp != nil {
			t.Fatalf("PVC %s holding more than the Backup's dumps: %v, deletionTimestamp %v", claimKey.Name, err, p.DeletionTimestamp)
		}
		e := testutil.WaitEvent(t, env.Client, ns, corev1.EventTypeWarning, mooringv1.ReasonStorageKept, tt.name)
		if !strings.Contains(e.Note, tt.want) {
			t.Errorf("event %q does not say why the volume is kept (%q)", e.Note, tt.want)
		}
		if !strings.Contains(p.Annotations[mooringv1.StorageKeptAnnotation], tt.want) {
			t.Errorf("PVC annotations %v do not say why it is kept", p.Annotations)
		}
		testutil.WaitGone(t, env.Client, jobKey, &batchv1.Job{}, "the cleanup Job deleted once its outcome was read")
	}
}

// plainEnv maps a container's plain environment variables to their values.
func plainEnv(c corev1.Container) map[string]string {
	m := map[string]string{}
	for _, e := range c.Env {
		m[e.Name] = e.Value
	}
	return m
}

// deleteDependents plays the garbage collector for an owner deleted with propagationPolicy
// Foreground: it deletes the Jobs and CronJobs in ns that have an owner reference to uid.
func deleteDependents(t *testing.T, ns string, uid types.UID) {
	t.Helper()
	jobs, cronJobs := &batchv1.JobList{}, &batchv1.CronJobList{}
	for _, l := range []client.ObjectList{jobs, cronJobs} {
		if err := env.Client.List(ctx, l, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
	}
	var dependents []client.Object
	for i := range jobs.Items {
		dependents = append(dependents, &jobs.Items[i])
	}
	for i := range cronJobs.Items {
		dependents = append(dependents, &cronJobs.Items[i])
	}
	for _, o := range dependents {
		for _, ref := range o.GetOwnerReferences() {
			if ref.UID != uid {
				continue
			}
			err := env.Client.Delete(ctx, o, client.PropagationPolicy(metav1.DeletePropagationBackground))
			if client.IgnoreNotFound(err) != nil {
				t.Fatal(err)
			}
		}
	}
}

// Under foreground deletion the garbage collector deletes every dependent of the Backup
// while its cleanup finalizer holds it. The cleanup Job is none (no owner reference), so
// it is not taken and started again for ever; it runs, the Backup goes, and the Job is
// deleted after it.
func TestCleanupUnderForegroundDeletion(t *testing.T) {
	ns := env.Namespace(t)
	db := createDB(t, ns, "orders")
	b := createBackup(t, ns, "nightly", "orders", func(b *mooringv1.Backup) { b.Spec.CleanupPolicy = mooringv1.CleanupDelete })
	key := client.ObjectKeyFromObject(b)
	makeRunning(t, db)
	waitReady(t, key, metav1.ConditionTrue, mooringv1.ReasonScheduled, mooringv1.BackupScheduled)

	if err := env.Client.Delete(ctx, b, client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil {
		t.Fatal(err)
	}
	jobKey := types.NamespacedName{Namespace: ns, Name: "nightly-cleanup"}
	job := &batchv1.Job{}
	testutil.WaitFor(t, env.Client, jobKey, job, "cleanup Job", func(*batchv1.Job) error { return nil })
	deleteDependents(t, ns, b.UID)
	kept := &batchv1.Job{}
	if err := env.Client.Get(ctx, jobKey, kept); err != nil || kept.UID != job.UID || kept.DeletionTimestamp != nil {
		t.Fatalf("the garbage collector took the cleanup Job (owners %v): %v, deletionTimestamp %v", job.OwnerReferences, err, kept.DeletionTimestamp)
	}
	// No dependent left: the garbage collector drops its finalizer.
	testutil.Update(t, env.Client, key, &mooringv1.Backup{}, func(b *mooringv1.Backup) {
		controllerutil.RemoveFinalizer(b, metav1.FinalizerDeleteDependents)
	})

	testutil.FinishJob(t, env.Client, jobKey, true)
	testutil.WaitGone(t, env.Client, key, &mooringv1.Backup{}, "Backup deleted after its cleanup")
	testutil.WaitGone(t, env.Client, jobKey, &batchv1.Job{}, "the cleanup Job deleted once its outcome was read")
}

// A failed cleanup can be abandoned by switching to Retain: the dumps stay, the Backup goes.
func TestCleanupAbandonedWithRetain(t *testing.T) {
	ns := env.Namespace(t)
	db := createDB(t, ns, "orders")
	b := createBackup(t, ns, "nightly", "orders", func(b *mooringv1.Backup) { b.Spec.CleanupPolicy = mooringv1.CleanupDelete })
	key := client.ObjectKeyFromObject(b)
	makeRunning(t, db)
	waitReady(t, key, metav1.ConditionTrue, mooringv1.ReasonScheduled, mooringv1.BackupScheduled)
	if err := env.Client.Delete(ctx, b); err != nil {
		t.Fatal(err)
	}
	jobKey := types.NamespacedName{Namespace: ns, Name: "nightly-cleanup"}
	testutil.WaitFor(t, env.Client, jobKey, &batchv1.Job{}, "cleanup Job", func(*batchv1.Job) error { return nil })
	testutil.FinishJob(t, env.Client, jobKey, false)
	waitReady(t, key, metav1.ConditionFalse, mooringv1.ReasonCleanupFailed, mooringv1.BackupFailed)
	testutil.Update(t, env.Client, key, &mooringv1.Backup{}, func(b *mooringv1.Backup) { b.Spec.CleanupPolicy = mooringv1.CleanupRetain })
	testutil.WaitGone(t, env.Client, key, &mooringv1.Backup{}, "Backup deleted with its dumps retained")
	p := &corev1.PersistentVolumeClaim{}
	if err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "nightly-storage"}, p); err != nil || p.DeletionTimestamp != nil {
		t.Fatalf("PVC with the retained dumps: %v, deletionTimestamp %v", err, p.DeletionTimestamp)
	}
}

// cleanupPolicy Retain: no finalizer, nothing removed, the volume stays.
func TestCleanupPolicyRetain(t *testing.T) {
	ns := env.Namespace(t)
	db := createDB(t, ns, "orders")
	b := createBackup(t, ns, "nightly", "orders", nil)
	key := client.ObjectKeyFromObject(b)
	makeRunning(t, db)
	claimKey := types.NamespacedName{Namespace: ns, Name: "nightly-storage"}
	testutil.WaitFor(t, env.Client, claimKey, &corev1.PersistentVolumeClaim{}, "PVC", func(*corev1.PersistentVolumeClaim) error { return nil })
	if err := env.Client.Delete(ctx, b); err != nil {
		t.Fatal(err)
	}
	testutil.WaitGone(t, env.Client, key, &mooringv1.Backup{}, "Backup deleted at once")
	p := &corev1.PersistentVolumeClaim{}
	if err := env.Client.Get(ctx, claimKey, p); err != nil || p.DeletionTimestamp != nil {
		t.Fatalf("PVC after a Retain delete: %v, deletionTimestamp %v", err, p.DeletionTimestamp)
	}
	if jobs := listJobs(t, ns, map[string]string{mooringv1.BackupJobTypeLabel: backup.JobCleanup}); len(jobs) != 0 {
		t.Fatalf("%d cleanup Jobs under Retain", len(jobs))
	}
}

// The schedule is checked at admission by the webhook, which names the field.
func TestInvalidScheduleRejected(t *testing.T) {
	ns := env.Namespace(t)
	for _, schedule := range []string{"every day", "61 * * * *", "TZ=Europe/Paris 0 3 * * *"} {
		b := &mooringv1.Backup{
			ObjectMeta: metav1.ObjectMeta{Name: "bad", Namespace: ns},
			Spec:       mooringv1.BackupSpec{DatabaseRef: mooringv1.DatabaseReference{Name: "orders"}, Schedule: schedule},
		}
		err := env.Client.Create(ctx, b)
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.schedule") {
			t.Errorf("schedule %q: error %v, want Invalid naming spec.schedule", schedule, err)
		}
	}
	ok := createBackup(t, ns, "good", "orders", func(b *mooringv1.Backup) { b.Spec.Schedule = "@daily" })
	// A merge patch carries no resourceVersion: the controller's writes cannot make it conflict.
	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"schedule":"* * *"}}`))
	if err := env.Client.Patch(ctx, ok, patch); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.schedule") {
		t.Errorf("update to an invalid schedule: %v", err)
	}
}

// A Backup whose database is deleted stops its schedule (each run could only fail), and
// takes it up again when a database of that name runs again.
func TestCronJobSuspendedWhileDatabaseGone(t *testing.T) {
	ns := env.Namespace(t)
	db := createDB(t, ns, "orders")
	b := createBackup(t, ns, "nightly", "orders", nil)
	key := client.ObjectKeyFromObject(b)
	makeRunning(t, db)
	suspended := func(want bool) func(*batchv1.CronJob) error {
		return func(c *batchv1.CronJob) error {
			if got := c.Spec.Suspend != nil && *c.Spec.Suspend; got != want {
				return fmt.Errorf("suspend %v, want %v", got, want)
			}
			return nil
		}
	}
	testutil.WaitFor(t, env.Client, key, &batchv1.CronJob{}, "CronJob running", suspended(false))

	if err := env.Client.Delete(ctx, db); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, env.Client, key, &batchv1.CronJob{}, "CronJob suspended once the database is gone", suspended(true))
	testutil.WaitEvent(t, env.Client, ns, corev1.EventTypeNormal, mooringv1.ReasonCronJobSuspended, "nightly")
	waitReady(t, key, metav1.ConditionFalse, mooringv1.ReasonDatabaseNotFound, mooringv1.BackupPending)

	// Play the garbage collector for the old cluster's children, then bring a new one up.
	for _, child := range []client.Object{
		&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: ns}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: ns}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "orders-headless", Namespace: ns}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "orders-ro", Namespace: ns}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "orders-binding", Namespace: ns}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "orders-state", Namespace: ns}},
		&networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: ns}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "orders-ca", Namespace: ns}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "orders-tls", Namespace: ns}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "orders-superuser-client", Namespace: ns}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "orders-replication", Namespace: ns}},
	} {
		if err := env.Client.Delete(ctx, child); client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
	}
	makeRunning(t, createDB(t, ns, "orders"))
	testutil.WaitFor(t, env.Client, key, &batchv1.CronJob{}, "CronJob resumed with the new database", suspended(false))
}

// A Backup that names its own volume (spec.storage.existingClaim) waits, with a condition
// and a Warning event and no CronJob, while that volume does not exist: a dump Job would
// sit Pending on it. It starts as soon as the volume appears (the on-demand watch of
// volume metadata), mounts it, and neither changes nor creates a volume of its own.
func TestBackupWaitsForExistingClaim(t *testing.T) {
	ns := env.Namespace(t)
	db := createDB(t, ns, "ledger")
	makeRunning(t, db)
	b := createBackup(t, ns, "weekly", "ledger", func(b *mooringv1.Backup) { b.Spec.Storage.ExistingClaim = "team-dumps" })
	key := client.ObjectKeyFromObject(b)
	got := waitReady(t, key, metav1.ConditionFalse, mooringv1.ReasonClaimNotFound, mooringv1.BackupPending)
	if c := meta.FindStatusCondition(got.Status.Conditions, mooringv1.ConditionReady); !strings.Contains(c.Message, "team-dumps") {
		t.Errorf("message %q does not name the claim", c.Message)
	}
	testutil.WaitEvent(t, env.Client, ns, corev1.EventTypeWarning, mooringv1.ReasonClaimNotFound, "weekly")
	if err := env.Client.Get(ctx, key, &batchv1.CronJob{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a CronJob exists while its volume is missing (err %v)", err)
	}

	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "team-dumps", Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	if err := env.Client.Create(ctx, claim); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, env.Client, key, &batchv1.CronJob{}, "CronJob weekly on the user's volume", func(c *batchv1.CronJob) error {
		if v := c.Spec.JobTemplate.Spec.Template.Spec.Volumes; len(v) == 0 || v[0].PersistentVolumeClaim == nil || v[0].PersistentVolumeClaim.ClaimName != "team-dumps" {
			return fmt.Errorf("volumes %+v", v)
		}
		return nil
	})
	waitReady(t, key, metav1.ConditionTrue, mooringv1.ReasonScheduled, mooringv1.BackupScheduled)
	after := &corev1.PersistentVolumeClaim{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(claim), after); err != nil {
		t.Fatal(err)
	}
	if after.ResourceVersion != claim.ResourceVersion {
		t.Errorf("the user's volume was written (resourceVersion %s, created at %s)", after.ResourceVersion, claim.ResourceVersion)
	}
	if err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "weekly-storage"}, &corev1.PersistentVolumeClaim{}); !apierrors.IsNotFound(err) {
		t.Errorf("a volume of Mooring's own was made beside the existing claim (err %v)", err)
	}
	testutil.ExpectNoWrites(t, backup.Component, 1, func() {
		testutil.Update(t, env.Client, key, &mooringv1.Backup{}, func(b *mooringv1.Backup) {
			b.Annotations = map[string]string{"example.com/touched": "yes"}
		})
	})
}

// A Backup with cleanupPolicy Delete whose existingClaim does not exist has no dumps to
// remove: it goes at once, without a cleanup Job that would sit Pending on the missing
// volume and keep it for ever.
func TestCleanupSkippedWhenExistingClaimMissing(t *testing.T) {
	ns := env.Namespace(t)
	db := createDB(t, ns, "ledger")
	makeRunning(t, db)
	b := createBackup(t, ns, "weekly", "ledger", func(b *mooringv1.Backup) {
		b.Spec.Storage.ExistingClaim = "team-dumps"
		b.Spec.CleanupPolicy = mooringv1.CleanupDelete
	})
	key := client.ObjectKeyFromObject(b)
	testutil.WaitFor(t, env.Client, key, &mooringv1.Backup{}, "cleanup finalizer", func(b *mooringv1.Backup) error {
		if len(b.Finalizers) != 1 || b.Finalizers[0] != mooringv1.BackupCleanupFinalizer {
			return fmt.Errorf("finalizers %v", b.Finalizers)
		}
		return nil
	})
	waitReady(t, key, metav1.ConditionFalse, mooringv1.ReasonClaimNotFound, mooringv1.BackupPending)

	if err := env.Client.Delete(ctx, b); err != nil {
		t.Fatal(err)
	}
	testutil.WaitGone(t, env.Client, key, &mooringv1.Backup{}, "Backup deleted without a cleanup Job (its existingClaim does not exist)")
	ev := testutil.WaitEvent(t, env.Client, ns, corev1.EventTypeNormal, mooringv1.ReasonNothingToClean, "weekly")
	if !strings.Contains(ev.Note, "team-dumps") {
		t.Errorf("event %q does not name the claim team-dumps", ev.Note)
	}
	if err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "weekly-cleanup"}, &batchv1.Job{}); !apierrors.IsNotFound(err) {
		t.Errorf("cleanup Job weekly-cleanup: want none for a missing claim, got err %v", err)
	}
}
