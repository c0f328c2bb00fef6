package dump

import (
	"path"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// The exit statuses of RestoreScript, one per cause of failure, so that the Job can tell
// a failure a retry may cure from one it cannot (RestoreJobSpec's pod failure policy)
// and the restore's caller can report the cause without reading logs.
const (
	// RestoreMisconfigured: a variable missing, an unknown engine, no client in the image.
	RestoreMisconfigured int32 = 2
	// RestoreFileMissing: no such file in the volume, or not one the Job can read.
	RestoreFileMissing int32 = 3
	// RestoreNotGzip: the file is not gzip, or is cut short (a volume that filled up).
	RestoreNotGzip int32 = 4
	// RestoreSQLError: the server refused a statement of the dump.
	RestoreSQLError int32 = 5
	// RestoreCannotConnect: the server could not be reached, refused the login, or the
	// connection broke. The only cause that is retried.
	RestoreCannotConnect int32 = 6
	// RestoreIncompatible: the dump's header names another engine, or a newer version
	// than the server's, which may not load it; nothing was loaded.
	RestoreIncompatible int32 = 7
)

// Restore is one load of a dump into a database's primary.
type Restore struct {
	// Database is the cluster to restore into. Its Secret must be the superuser's (the
	// cluster's admin Secret, whose username is Superuser(Engine)): a dump holds tables
	// the application user may not be allowed to create, and owners it may not set. For
	// PostgreSQL, Name is the database the dump was taken from, and is loaded into.
	Database Database
	// Volume holds the dump; it is mounted read-only, so that a restore can never change
	// the backups it reads.
	Volume Volume
	// File is the dump, relative to Volume's directory: a name such as
	// "nightly-20250101T030000Z.sql.gz". A path that climbs out of the directory ("..")
	// is cut back into the volume.
	File string
	// Owner, when File is empty, picks the newest of the dumps the Backup of that name
	// made (<owner>-<timestamp>.sql.gz): the script looks when it runs.
	Owner string
	// Labels go on the Job and its pods.
	Labels map[string]string
}

// FilePath is where the restore Job sees the dump; empty when the script picks the
// newest of Owner's.
func (r Restore) FilePath() string {
	if r.File == "" {
		return ""
	}
	return path.Join(r.Volume.Dir(), path.Clean("/"+r.File))
}

// RestorePodTemplate is the pod that runs RestoreScript for r, in the cluster's server
// image: the dump is read by the client of the server version that wrote it. The
// superuser's credentials reach it only through secretKeyRef.
func RestorePodTemplate(r Restore) corev1.PodTemplateSpec {
	db := r.Database
	secretRef := func(key string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: db.SecretName}, Key: key,
		}}
	}
	env := []corev1.EnvVar{
		{Name: "DB_ENGINE", Value: string(db.Engine)},
		{Name: "DB_HOST", Value: db.Host},
		{Name: "DB_PORT", Value: strconv.Itoa(int(db.Port))},
		{Name: "DB_NAME", Value: db.Name},
		{Name: "DB_USER", ValueFrom: secretRef(db.UsernameKey)},
		{Name: PasswordEnv(db.Engine), ValueFrom: secretRef(db.PasswordKey)},
		{Name: "RESTORE_FILE", Value: r.FilePath()},
		{Name: "RESTORE_DIR", Value: r.Volume.Dir()},
		{Name: "RESTORE_OWNER", Value: r.Owner},
		// The outcome's line becomes the pod's termination message, where the Job's
		// owner reads it without access to logs.
		{Name: "REPORT_FILE", Value: corev1.TerminationMessagePathDefault},
		// The root filesystem is read-only; the clients look for their rc files here.
		{Name: "HOME", Value: "/tmp"},
	}
	pt := podTemplate(ServerImage(db.Engine, db.Version), RestoreScript, env, r.Volume, true, r.Labels)
	applyTLS(&pt, db.Engine, db.TLS)
	c := &pt.Spec.Containers[0]
	c.Name = restoreContainerName
	// A script killed before it could write its report still leaves its last words.
	c.TerminationMessagePolicy = corev1.TerminationMessageFallbackToLogsOnError
	return pt
}

// RestoreJobSpec runs template (a RestorePodTemplate) to completion within
// ActiveDeadline. Only a lost connection is retried, BackoffLimit times: a missing file,
// a file that is not a dump or a statement the server refuses fails the same way again,
// and a MySQL or MariaDB restore that failed half-way should not be run over again
// unasked. An evicted or preempted pod is not counted as a failure.
func RestoreJobSpec(template corev1.PodTemplateSpec) batchv1.JobSpec {
	spec := JobSpec(template)
	spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
		{
			Action: batchv1.PodFailurePolicyActionIgnore,
			OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{
				{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue},
			},
		},
		{
			Action: batchv1.PodFailurePolicyActionFailJob,
			OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
				ContainerName: ptr.To(restoreContainerName),
				Operator:      batchv1.PodFailurePolicyOnExitCodesOpIn,
				Values:        []int32{RestoreMisconfigured, RestoreFileMissing, RestoreNotGzip, RestoreSQLError, RestoreIncompatible},
			},
		},
	}}
	return spec
}

// RestoreJob is the Job named name that loads r.File into r.Database's primary. Like the
// other builders here it sets no namespace and no owner: the caller knows both.
func RestoreJob(name string, r Restore) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: r.Labels},
		Spec:       RestoreJobSpec(RestorePodTemplate(r)),
	}
}
