package backup

import (
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/api/v1beta1"
	"github.com/mooringhq/mooring/internal/controller/database"
)

func newBackup(mutate func(*mooringv1.Backup)) *mooringv1.Backup {
	b := &mooringv1.Backup{
		ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "shop"},
		Spec: mooringv1.BackupSpec{
			DatabaseRef: mooringv1.DatabaseReference{Name: "orders"}, Schedule: "0 3 * * *",
			BackupPath: "/backups", Retention: mooringv1.BackupRetention{KeepLast: 7}, CleanupPolicy: mooringv1.CleanupRetain,
		},
	}
	if mutate != nil {
		mutate(b)
	}
	return b
}

func newDB(engineName v1beta1.DatabaseEngine, version string) *v1beta1.DatabaseCluster {
	return &v1beta1.DatabaseCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: "shop"},
		Spec:       v1beta1.DatabaseClusterSpec{Engine: engineName, Version: version, SecretName: "orders-credentials"},
	}
}

func env(c corev1.Container) map[string]corev1.EnvVar {
	out := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		out[e.Name] = e
	}
	return out
}

func TestCronJob(t *testing.T) {
	tests := map[string]struct {
		backup                      *mooringv1.Backup
		db                          *v1beta1.DatabaseCluster
		image, passwordEnv, claim   string
		dir, keepLast, host, dbName string
		suspend                     bool
	}{
		"postgresql": {
			backup: newBackup(nil), db: newDB(v1beta1.PostgreSQL, "17"),
			image: "docker.io/library/postgres:17", passwordEnv: "PGPASSWORD", claim: "nightly-storage",
			dir: "/backup-volume/backups", keepLast: "7", host: "orders.shop.svc", dbName: "postgres",
		},
		"mysql, existing claim, suspended": {
			backup: newBackup(func(b *mooringv1.Backup) {
				b.Spec.Storage.ExistingClaim = "team-backups"
				b.Spec.BackupPath = "/db/orders"
				b.Spec.Retention.KeepLast = 2
				b.Spec.Suspend = true
			}),
			db:    newDB(v1beta1.MySQL, "8.4"),
			image: "docker.io/library/mysql:8.4", passwordEnv: "MYSQL_PWD", claim: "team-backups",
			dir: "/backup-volume/db/orders", keepLast: "2", host: "orders.shop.svc", suspend: true,
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			cj := CronJob(tt.backup, database.DumpTarget(tt.db))
			if cj.Name != "nightly" || cj.Spec.Schedule != "0 3 * * *" || *cj.Spec.Suspend != tt.suspend {
				t.Errorf("name %s schedule %q suspend %v", cj.Name, cj.Spec.Schedule, *cj.Spec.Suspend)
			}
			if cj.Spec.ConcurrencyPolicy != batchv1.ForbidConcurrent || *cj.Spec.SuccessfulJobsHistoryLimit != SuccessfulJobsHistory ||
				*cj.Spec.FailedJobsHistoryLimit != FailedJobsHistory {
				t.Errorf("concurrency %s history %d/%d", cj.Spec.ConcurrencyPolicy, *cj.Spec.SuccessfulJobsHistoryLimit, *cj.Spec.FailedJobsHistoryLimit)
			}
			// The Jobs the CronJob makes must map back to the Backup through these labels.
			l := cj.Spec.JobTemplate.Labels
			if l[mooringv1.InstanceLabel] != "nightly" || l[mooringv1.ComponentLabel] != Component || l[mooringv1.ManagedByLabel] != mooringv1.ManagedBy || l[mooringv1.BackupJobTypeLabel] != JobScheduled {
				t.Errorf("job template labels %v", l)
			}
			pod := cj.Spec.JobTemplate.Spec.Template.Spec
			c := pod.Containers[0]
			e := env(c)
			if c.Image != tt.image || pod.Volumes[0].PersistentVolumeClaim.ClaimName != tt.claim || e["BACKUP_DIR"].Value != tt.dir ||
				e["KEEP_LAST"].Value != tt.keepLast || e["DB_HOST"].Value != tt.host || e["DB_NAME"].Value != tt.dbName {
				t.Errorf("image %s claim %s env %v", c.Image, pod.Volumes[0].PersistentVolumeClaim.ClaimName, e)
			}
			for _, name := range []string{"DB_USER", tt.passwordEnv} {
				ref := e[name].ValueFrom
				if e[name].Value != "" || ref == nil || ref.SecretKeyRef == nil || ref.SecretKeyRef.Name != "orders-credentials" {
					t.Errorf("%s not from the credentials Secret: %+v", name, e[name])
				}
			}
			if strings.Contains(strings.Join(c.Command, " "), "PASSWORD=") || strings.Contains(strings.Join(c.Command, " "), "PWD=") {
				t.Errorf("a password on the command line: %v", c.Command)
			}
			if sc := pod.SecurityContext; !*sc.RunAsNonRoot || *c.SecurityContext.AllowPrivilegeEscalation || c.SecurityContext.Capabilities.Drop[0] != "ALL" {
				t.Errorf("security context not restricted: %+v %+v", sc, c.SecurityContext)
			}
		})
	}
}

func TestStorageClaim(t *testing.T) {
	tests := map[string]struct {
		backup *mooringv1.Backup
		want   string // "" for no claim
	}{
		"default size":   {backup: newBackup(nil), want: "5Gi"},
		"size given":     {backup: newBackup(func(b *mooringv1.Backup) { b.Spec.Storage.Size = ptr.To(resource.MustParse("20Gi")) }), want: "20Gi"},
		"existing claim": {backup: newBackup(func(b *mooringv1.Backup) { b.Spec.Storage.ExistingClaim = "mine" })},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			pvc := StorageClaim(tt.backup)
			if tt.want == "" {
				if pvc != nil || tt.backup.ClaimName() != "mine" {
					t.Fatalf("claim %v for an existing claim", pvc)
				}
				return
			}
			got := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
			if pvc.Name != "nightly-storage" || got.String() != tt.want || len(pvc.OwnerReferences) != 0 || pvc.Labels[mooringv1.ManagedByLabel] != mooringv1.ManagedBy {
				t.Errorf("claim %s size %s owners %v labels %v", pvc.Name, got.String(), pvc.OwnerReferences, pvc.Labels)
			}
		})
	}
}

func TestManualAndCleanupJobs(t *testing.T) {
	b := newBackup(nil)
	target := database.DumpTarget(newDB(v1beta1.PostgreSQL, "17"))
	a, again, other := ManualJob(b, target, "2025-01-31"), ManualJob(b, target, "2025-01-31"), ManualJob(b, target, "2025-02-01")
	if a.Name != again.Name || a.Name == other.Name || !strings.HasPrefix(a.Name, "nightly-manual-") || len(a.Name) != len("nightly-manual-")+8 {
		t.Errorf("manual Job names %s %s %s: want one per distinct value", a.Name, again.Name, other.Name)
	}
	if a.Labels[mooringv1.BackupJobTypeLabel] != JobManual || a.Spec.Template.Labels[mooringv1.InstanceLabel] != "nightly" || a.Annotations[mooringv1.BackupNowValueAnnotation] != "2025-01-31" {
		t.Errorf("manual Job labels %v template labels %v annotations %v", a.Labels, a.Spec.Template.Labels, a.Annotations)
	}
	c := CleanupJob(newBackup(func(b *mooringv1.Backup) { b.Spec.BackupPath = "/x" }))
	if c.Name != "nightly-cleanup" || env(c.Spec.Template.Spec.Containers[0])["BACKUP_DIR"].Value != "/backup-volume/x" || c.Labels[mooringv1.BackupJobTypeLabel] != JobCleanup {
		t.Errorf("cleanup Job %s %+v", c.Name, c.Spec.Template.Spec.Containers[0].Env)
	}
	// In the volume Mooring made, the cleanup reports on the whole volume, which is deleted
	// whole; in a volume the user named it does not (the volume is never deleted).
	if e := env(c.Spec.Template.Spec.Containers[0]); e["VOLUME_ROOT"].Value != "/backup-volume" || e["REPORT_FILE"].Value != "/dev/termination-log" {
		t.Errorf("cleanup of Mooring's volume without a report: %+v", c.Spec.Template.Spec.Containers[0].Env)
	}
	shared := CleanupJob(newBackup(func(b *mooringv1.Backup) { b.Spec.Storage.ExistingClaim = "shared" }))
	if e := env(shared.Spec.Template.Spec.Containers[0]); e["VOLUME_ROOT"].Value != "" || e["REPORT_FILE"].Value != "" {
		t.Errorf("cleanup of a user's volume lists it: %+v", shared.Spec.Template.Spec.Containers[0].Env)
	}
	// Dumps, their retention and their cleanup are the Backup's own: Backups sharing a
	// volume (spec.storage.existingClaim) keep each other's dumps.
	for job, spec := range map[string]batchv1.JobSpec{"manual": a.Spec, "cleanup": c.Spec, "scheduled": CronJob(b, target).Spec.JobTemplate.Spec} {
		if got := env(spec.Template.Spec.Containers[0])["DUMP_OWNER"].Value; got != "nightly" {
			t.Errorf("%s Job DUMP_OWNER = %q, want the Backup's name nightly", job, got)
		}
	}
}
