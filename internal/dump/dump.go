package dump

import (
	"crypto/sha256"
	_ "embed" // the scripts
	"encoding/hex"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/mooringhq/mooring/api/v1beta1"
)

// BackupScript dumps a database to <dir>/<owner>-<timestamp>.sql.gz and prunes the
// owner's old dumps.
//
//go:embed backup.sh
var BackupScript string

// CleanupScript removes one owner's dumps under a directory.
//
//go:embed cleanup.sh
var CleanupScript string

// RestoreScript loads one dump that BackupScript made into a database's primary.
//
//go:embed restore.sh
var RestoreScript string

const (
	// MountPath is where the backup volume is mounted; a Backup's backupPath is a
	// directory inside the volume, so dumps go to MountPath + backupPath.
	MountPath = "/backup-volume"
	// RunAsUser is the user and group the Jobs run as: the "postgres", "mysql" and
	// "mysql" (MariaDB) users of the official images. The volume is given to this group
	// (fsGroup) so it can write.
	RunAsUser int64 = 999
	// BackoffLimit is how many times a failed dump is retried before its Job fails.
	BackoffLimit int32 = 2
	// ActiveDeadline bounds a whole Job, retries included: a dump that hangs (a lock, a
	// dead connection) must not hold the schedule forever under concurrencyPolicy Forbid.
	ActiveDeadline int64 = 6 * 60 * 60
	// maxJobName keeps a Job's name a valid value for the job-name label of its pods.
	maxJobName           = 63
	containerName        = "dump"
	restoreContainerName = "restore"
	volumeName           = "backup"
	tmpVolumeName        = "tmp"
)

// Database is what a dump or a restore needs to know about the database it works on.
type Database struct {
	// Engine decides the image (ServerImage) and the tools: pg_dump and psql, mysqldump
	// and mysql, or mariadb-dump and mariadb.
	Engine v1beta1.DatabaseEngine
	// Version is the server's version, the tag of the image the Jobs run: the server's
	// own clients, since pg_dump refuses servers newer than itself and a dump is read
	// best by the client of the server that wrote it.
	Version string
	// Host and Port reach the primary.
	Host string
	Port int32
	// Name is the database pg_dump dumps, and a PostgreSQL restore loads into;
	// mysqldump and mariadb-dump dump every database the user sees, and their dumps name
	// the databases they restore into.
	Name string
	// SecretName is the Secret with the credentials, under UsernameKey and PasswordKey:
	// the application user's for a dump, the superuser's for a restore.
	SecretName, UsernameKey, PasswordKey string
	// TLS, when set, makes the client verify the server (and present a certificate).
	TLS *ClientTLS
}

// Volume is where dumps are written: a PVC and a directory in it.
type Volume struct {
	ClaimName string
	// Path is an absolute directory inside the volume, e.g. "/backups".
	Path string
}

// Dir is the directory the Jobs see the dumps in.
func (v Volume) Dir() string {
	if v.Path == "" || v.Path == "/" {
		return MountPath
	}
	return MountPath + v.Path
}

// Dump is one kind of dump run: a Backup's schedule or on-demand dump, or a final
// snapshot.
type Dump struct {
	Database Database
	Volume   Volume
	// Owner is the Backup the dumps are for: they are named <owner>-<timestamp>.sql.gz,
	// and KeepLast counts only these, so Backups that share a volume and a directory do
	// not prune each other's dumps. Empty for a final snapshot, which Prefix names.
	Owner string
	// KeepLast is how many of the owner's dumps are kept after a dump; 0 keeps all.
	KeepLast int32
	// Prefix goes before the timestamp in the file name; prefixed dumps are never pruned.
	Prefix string
	// Labels go on the pods.
	Labels map[string]string
}

// PasswordEnv is the variable the engine's clients read their password from: MariaDB's
// read MySQL's.
func PasswordEnv(engine v1beta1.DatabaseEngine) string {
	if engine == v1beta1.MySQL || engine == v1beta1.MariaDB {
		return "MYSQL_PWD"
	}
	return "PGPASSWORD"
}

// Superuser is the engine's superuser, the user a restore or a credentials change
// connects as: MariaDB's is root, as MySQL's.
func Superuser(engine v1beta1.DatabaseEngine) string {
	if engine == v1beta1.MySQL || engine == v1beta1.MariaDB {
		return "root"
	}
	return "postgres"
}

// PodTemplate is the pod that runs BackupScript for d.
func PodTemplate(d Dump) corev1.PodTemplateSpec {
	db := d.Database
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
		// Credentials only through the environment, from the Secret: never in the pod
		// spec or on a command line.
		{Name: "DB_USER", ValueFrom: secretRef(db.UsernameKey)},
		{Name: PasswordEnv(db.Engine), ValueFrom: secretRef(db.PasswordKey)},
		{Name: "BACKUP_DIR", Value: d.Volume.Dir()},
		{Name: "KEEP_LAST", Value: strconv.Itoa(int(d.KeepLast))},
		{Name: "DUMP_PREFIX", Value: d.Prefix},
	}
	if d.Owner != "" {
		env = append(env, corev1.EnvVar{Name: "DUMP_OWNER", Value: d.Owner})
	}
	pt := podTemplate(ServerImage(db.Engine, db.Version), BackupScript, env, d.Volume, false, d.Labels)
	applyTLS(&pt, db.Engine, db.TLS)
	return pt
}

// CleanupPodTemplate is the pod that runs CleanupScript on v, for the dumps of owner.
func CleanupPodTemplate(v Volume, owner string, labels map[string]string) corev1.PodTemplateSpec {
	env := []corev1.EnvVar{{Name: "BACKUP_DIR", Value: v.Dir()}, {Name: "DUMP_OWNER", Value: owner}}
	return podTemplate(CurrentImages().Cleanup, CleanupScript, env, v, false, labels)
}

// JobSpec runs template to completion, retrying a failed pod BackoffLimit times, for at
// most ActiveDeadline seconds.
func JobSpec(template corev1.PodTemplateSpec) batchv1.JobSpec {
	return batchv1.JobSpec{BackoffLimit: ptr.To(BackoffLimit), ActiveDeadlineSeconds: ptr.To(ActiveDeadline), Template: template}
}

// podTemplate runs script in image with v mounted at MountPath, read-only when readOnly.
// The pod meets the restricted Pod Security Standard: a non-root user, no capabilities,
// the runtime's seccomp profile and a read-only root filesystem, with an emptyDir on /tmp
// for what the clients write.
func podTemplate(image, script string, env []corev1.EnvVar, v Volume, readOnly bool, labels map[string]string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{
			RestartPolicy:                corev1.RestartPolicyNever,
			AutomountServiceAccountToken: ptr.To(false),
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   ptr.To(true),
				RunAsUser:      ptr.To(RunAsUser),
				RunAsGroup:     ptr.To(RunAsUser),
				FSGroup:        ptr.To(RunAsUser),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name:    containerName,
				Image:   image,
				Command: []string{"/bin/sh", "-c", script},
				Env:     env,
				VolumeMounts: []corev1.VolumeMount{
					{Name: volumeName, MountPath: MountPath, ReadOnly: readOnly},
					{Name: tmpVolumeName, MountPath: "/tmp"},
				},
				SecurityContext: &corev1.SecurityContext{
					RunAsNonRoot:             ptr.To(true),
					AllowPrivilegeEscalation: ptr.To(false),
					ReadOnlyRootFilesystem:   ptr.To(true),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
					SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
				},
			}},
			Volumes: []corev1.Volume{
				{Name: volumeName, VolumeSource: corev1.VolumeSource{
					PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: v.ClaimName},
				}},
				// The root filesystem is read-only; the clients may want a scratch directory.
				{Name: tmpVolumeName, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			},
		},
	}
}

// JobName joins base and suffix ("orders", "final-snapshot") into a name a Job can have:
// at most 63 characters, since its pods carry it as a label. A base too long for that is
// cut and made unique again with a hash of the whole base; the cut drops trailing '-' and
// '.' so that the joint stays a valid DNS-1123 label ("prod.-hash" is not one).
func JobName(base, suffix string) string {
	name := base + "-" + suffix
	if len(name) <= maxJobName {
		return name
	}
	h := ShortHash(base)
	keep := maxJobName - len(suffix) - len(h) - 2
	return strings.TrimRight(base[:keep], "-.") + "-" + h + "-" + suffix
}

// ShortHash is 8 hex characters of the SHA-256 of s: short enough for a name, long enough
// that two values a user chooses do not collide in practice.
func ShortHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:4])
}
