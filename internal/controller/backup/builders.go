package backup

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/internal/dump"
	"github.com/mooringhq/mooring/internal/engine"
)

const (
	// Component is the app.kubernetes.io/component of a Backup's children.
	Component = mooringv1.BackupComponent
	// JobScheduled marks the Jobs the CronJob creates (a value of mooringv1.BackupJobTypeLabel).
	JobScheduled = "scheduled"
	// JobManual marks a Job made for a backup-now annotation.
	JobManual = "manual"
	// JobCleanup marks the Job that removes the dumps of a deleted Backup.
	JobCleanup = "cleanup"

	// SuccessfulJobsHistory bounds history: the CronJob keeps this many finished Jobs, and
	// Mooring as many finished on-demand Jobs besides the current one.
	SuccessfulJobsHistory int32 = 3
	// FailedJobsHistory is the same bound for failed Jobs.
	FailedJobsHistory int32 = 1
	// ManualJobsHistory is how many finished on-demand Jobs Mooring keeps.
	ManualJobsHistory = 3
	// startingDeadline lets a schedule missed while the controller was down still run
	// within ten minutes, and no later.
	startingDeadline int64 = 600
)

// JobLabels are the labels of a Backup's Jobs and their pods: the engine's, which the
// cache selects on and which map a Job back to its Backup, plus the Job's type.
func JobLabels(b *mooringv1.Backup, jobType string) map[string]string {
	l := engine.Labels(Component, b.Name)
	l[mooringv1.BackupJobTypeLabel] = jobType
	return l
}

// StorageSize is the size of the volume Mooring creates for the dumps.
func StorageSize(b *mooringv1.Backup) resource.Quantity {
	if b.Spec.Storage.Size != nil {
		return *b.Spec.Storage.Size
	}
	return resource.MustParse(mooringv1.DefaultStorageSize)
}

// StorageClaim is the volume for the dumps, or nil when the Backup names an existing
// claim. It has no owner reference: under cleanupPolicy Retain it outlives the Backup, and
// a Backup created again under the same name takes it up again.
func StorageClaim(b *mooringv1.Backup) *corev1.PersistentVolumeClaim {
	if b.Spec.Storage.ExistingClaim != "" {
		return nil
	}
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: b.ClaimName(), Namespace: b.Namespace, Labels: engine.Labels(Component, b.Name)},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: StorageSize(b)},
			},
		},
	}
}

// Volume is where the Backup's dumps go.
func Volume(b *mooringv1.Backup) dump.Volume {
	return dump.Volume{ClaimName: b.ClaimName(), Path: b.DumpPath()}
}

// dumpJobSpec is the Job that dumps db once into the Backup's volume and prunes old dumps.
func dumpJobSpec(b *mooringv1.Backup, db dump.Database, jobType string) batchv1.JobSpec {
	return dump.JobSpec(dump.PodTemplate(dump.Dump{
		Database: db, Volume: Volume(b), Owner: b.Name, KeepLast: max(b.Spec.Retention.KeepLast, 1),
		Labels: JobLabels(b, jobType),
	}))
}

// CronJob runs the Backup's dumps on its schedule. Forbid: a dump never starts while the
// previous one still runs, so two never prune each other's files or load the database twice.
func CronJob(b *mooringv1.Backup, db dump.Database) *batchv1.CronJob {
	return &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: b.Name},
		Spec: batchv1.CronJobSpec{
			Schedule:                   b.Spec.Schedule,
			Suspend:                    ptr.To(b.Spec.Suspend),
			ConcurrencyPolicy:          batchv1.ForbidConcurrent,
			StartingDeadlineSeconds:    ptr.To(startingDeadline),
			SuccessfulJobsHistoryLimit: ptr.To(SuccessfulJobsHistory),
			FailedJobsHistoryLimit:     ptr.To(FailedJobsHistory),
			JobTemplate: batchv1.JobTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: JobLabels(b, JobScheduled)},
				Spec:       dumpJobSpec(b, db, JobScheduled),
			},
		},
	}
}

// ManualJobName is the Job for one value of the backup-now annotation: the same value
// always names the same Job, which is what makes a value start one backup and never two.
func ManualJobName(b *mooringv1.Backup, value string) string {
	return dump.JobName(b.Name, "manual-"+dump.ShortHash(value))
}

// ManualJob is the on-demand dump for one backup-now value.
func ManualJob(b *mooringv1.Backup, db dump.Database, value string) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name:        ManualJobName(b, value),
			Labels:      JobLabels(b, JobManual),
			Annotations: map[string]string{mooringv1.BackupNowValueAnnotation: value},
		},
		Spec: dumpJobSpec(b, db, JobManual),
	}
}

// CleanupJobName is the Job that removes the dumps of a deleted Backup.
func CleanupJobName(b *mooringv1.Backup) string { return dump.JobName(b.Name, "cleanup") }

// CleanupJob removes the Backup's dumps under its backupPath; in the volume Mooring made
// for them it also reports what else is left there (finalize_report.go). It is created
// while the Backup is being deleted, so it has no owner reference (finalize.go says why):
// the Backup's labels and UID tell whose it is.
func CleanupJob(b *mooringv1.Backup) *batchv1.Job {
	template := dump.CleanupPodTemplate(Volume(b), b.Name, JobLabels(b, JobCleanup))
	if StorageClaim(b) != nil {
		template = withReport(template)
	}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: CleanupJobName(b), Namespace: b.Namespace, Labels: JobLabels(b, JobCleanup),
			Annotations: map[string]string{mooringv1.FinalizingUIDAnnotation: string(b.UID)}},
		Spec: dump.JobSpec(template),
	}
}
