package dump

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/mooringhq/mooring/api/v1beta1"
)

func testDump(engine v1beta1.DatabaseEngine, version string) Dump {
	return Dump{
		Database: Database{Engine: engine, Version: version, Host: "orders.shop.svc", Port: 5432, Name: "postgres",
			SecretName: "orders-credentials", UsernameKey: "username", PasswordKey: "password"},
		Volume:   Volume{ClaimName: "nightly-storage", Path: "/backups"},
		KeepLast: 7,
		Labels:   map[string]string{"app.kubernetes.io/instance": "nightly"},
	}
}

func envOf(c corev1.Container) map[string]corev1.EnvVar {
	out := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		out[e.Name] = e
	}
	return out
}

func TestPodTemplate(t *testing.T) {
	tests := map[string]struct {
		dump                     Dump
		image, passwordEnv, dir  string
		keepLast, prefix         string
		wantPrunes, wantSnapshot bool
	}{
		"postgresql schedule": {dump: testDump(v1beta1.PostgreSQL, "17"), image: "docker.io/library/postgres:17",
			passwordEnv: "PGPASSWORD", dir: "/backup-volume/backups", keepLast: "7"},
		"mysql schedule": {dump: testDump(v1beta1.MySQL, "8.4"), image: "docker.io/library/mysql:8.4",
			passwordEnv: "MYSQL_PWD", dir: "/backup-volume/backups", keepLast: "7"},
		"mariadb schedule": {dump: testDump(v1beta1.MariaDB, "11.8"), image: "docker.io/library/mariadb:11.8",
			passwordEnv: "MYSQL_PWD", dir: "/backup-volume/backups", keepLast: "7"},
		"final snapshot at the volume root": {
			dump: func() Dump {
				d := testDump(v1beta1.PostgreSQL, "18")
				d.KeepLast, d.Prefix, d.Volume.Path = 0, "final-snapshot-orders-", "/"
				return d
			}(),
			image: "docker.io/library/postgres:18", passwordEnv: "PGPASSWORD", dir: "/backup-volume", keepLast: "0", prefix: "final-snapshot-orders-",
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			pt := PodTemplate(tt.dump)
			c := pt.Spec.Containers[0]
			env := envOf(c)
			if c.Image != tt.image || env["BACKUP_DIR"].Value != tt.dir || env["KEEP_LAST"].Value != tt.keepLast || env["DUMP_PREFIX"].Value != tt.prefix {
				t.Errorf("image %s dir %s keep %s prefix %q", c.Image, env["BACKUP_DIR"].Value, env["KEEP_LAST"].Value, env["DUMP_PREFIX"].Value)
			}
			for _, name := range []string{"DB_USER", tt.passwordEnv} {
				e := env[name]
				if e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil || e.ValueFrom.SecretKeyRef.Name != "orders-credentials" {
					t.Errorf("%s is not taken from the Secret: %+v", name, e)
				}
			}
			if got := strings.Join(c.Command, " "); !strings.HasPrefix(got, "/bin/sh -c ") || !strings.Contains(got, "pg_dump") {
				t.Errorf("command %q does not run the backup script", got)
			}
			if pt.Labels["app.kubernetes.io/instance"] != "nightly" || pt.Spec.Volumes[0].PersistentVolumeClaim.ClaimName != "nightly-storage" {
				t.Errorf("labels %v volumes %+v", pt.Labels, pt.Spec.Volumes)
			}
			if c.VolumeMounts[0].ReadOnly {
				t.Error("a dump's volume is mounted read-only")
			}
			assertRestricted(t, pt.Spec)
		})
	}
}

func TestCleanupPodTemplate(t *testing.T) {
	pt := CleanupPodTemplate(Volume{ClaimName: "shared", Path: "/team/orders"}, "orders", nil)
	c := pt.Spec.Containers[0]
	if c.Image != DefaultCleanupImage || envOf(c)["BACKUP_DIR"].Value != "/backup-volume/team/orders" || !strings.Contains(c.Command[2], "rm -f") {
		t.Errorf("cleanup container %+v", c)
	}
	if pt.Spec.Volumes[0].PersistentVolumeClaim.ClaimName != "shared" {
		t.Errorf("volumes %+v", pt.Spec.Volumes)
	}
	assertRestricted(t, pt.Spec)
}

// assertRestricted checks what the restricted Pod Security Standard asks of a pod.
func assertRestricted(t *testing.T, spec corev1.PodSpec) {
	t.Helper()
	psc, sc := spec.SecurityContext, spec.Containers[0].SecurityContext
	if psc == nil || sc == nil || !*psc.RunAsNonRoot || *psc.RunAsUser == 0 || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Fatalf("pod security context %+v", psc)
	}
	if *sc.AllowPrivilegeEscalation || !*sc.ReadOnlyRootFilesystem || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" {
		t.Errorf("container security context %+v", sc)
	}
	if *spec.AutomountServiceAccountToken || spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("token %v restart %s", *spec.AutomountServiceAccountToken, spec.RestartPolicy)
	}
}

func TestJobName(t *testing.T) {
	long := strings.Repeat("a", 60)
	tests := map[string]struct {
		base, suffix, want string
	}{
		"short":           {base: "orders", suffix: "final-snapshot", want: "orders-final-snapshot"},
		"exactly 63":      {base: strings.Repeat("b", 48), suffix: "final-snapshot", want: strings.Repeat("b", 48) + "-final-snapshot"},
		"long is hashed":  {base: long, suffix: "cleanup", want: long[:46] + "-" + ShortHash(long) + "-cleanup"},
		"cut at a dot":    {base: "orders-db-nightly-backup-eu-west-prod.example-teamx", suffix: "manual-" + ShortHash("v1"), want: "orders-db-nightly-backup-eu-west-prod-" + ShortHash("orders-db-nightly-backup-eu-west-prod.example-teamx") + "-manual-" + ShortHash("v1")},
		"manual with key": {base: "nightly", suffix: "manual-" + ShortHash("v1"), want: "nightly-manual-" + ShortHash("v1")},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			got := JobName(tt.base, tt.suffix)
			if got != tt.want || len(got) > 63 || len(validation.IsDNS1123Label(got)) > 0 {
				t.Errorf("JobName = %q (%d chars), want %q", got, len(got), tt.want)
			}
		})
	}
	if ShortHash("v1") == ShortHash("v2") || len(ShortHash("v1")) != 8 {
		t.Errorf("ShortHash %q %q", ShortHash("v1"), ShortHash("v2"))
	}
}

// A hung dump must end: under concurrencyPolicy Forbid it would block every later run.
func TestJobSpecIsBounded(t *testing.T) {
	spec := JobSpec(corev1.PodTemplateSpec{})
	if spec.ActiveDeadlineSeconds == nil || *spec.ActiveDeadlineSeconds <= 0 || spec.BackoffLimit == nil {
		t.Fatalf("job spec %+v has no deadline or no backoff limit", spec)
	}
}

// A cluster that pulls only from a mirror runs the dump and cleanup Jobs from it.
func TestImagesFromAMirror(t *testing.T) {
	t.Cleanup(func() {
		if err := SetImages(DefaultImages()); err != nil {
			t.Fatal(err)
		}
	})
	const mirror = "mirror.example.com/hub/"
	err := SetImages(Images{
		PostgreSQL: WithRegistry(DefaultPostgreSQLImage, mirror),
		MySQL:      "registry.internal/db/mysql",
		MariaDB:    WithRegistry(DefaultMariaDBImage, mirror),
		Cleanup:    WithRegistry(DefaultCleanupImage, mirror),
	})
	if err != nil {
		t.Fatal(err)
	}
	image := func(pt corev1.PodTemplateSpec) string { return pt.Spec.Containers[0].Image }
	dumpOf := func(engine v1beta1.DatabaseEngine, version string) string {
		return image(PodTemplate(Dump{Database: Database{Engine: engine, Version: version}, Volume: Volume{ClaimName: "c"}}))
	}
	restoreOf := func(engine v1beta1.DatabaseEngine, version string) string {
		return image(RestorePodTemplate(Restore{Database: Database{Engine: engine, Version: version}, Volume: Volume{ClaimName: "c"}}))
	}
	for _, c := range []struct{ got, want string }{
		{dumpOf(v1beta1.PostgreSQL, "17"), "mirror.example.com/hub/library/postgres:17"},
		{restoreOf(v1beta1.PostgreSQL, "17"), "mirror.example.com/hub/library/postgres:17"},
		{ServerImage(v1beta1.PostgreSQL, "17"), "mirror.example.com/hub/library/postgres:17"},
		{dumpOf(v1beta1.MySQL, "8.4"), "registry.internal/db/mysql:8.4"},
		{restoreOf(v1beta1.MySQL, "8.4"), "registry.internal/db/mysql:8.4"},
		{dumpOf(v1beta1.MariaDB, "11.8"), "mirror.example.com/hub/library/mariadb:11.8"},
		{restoreOf(v1beta1.MariaDB, "11.8"), "mirror.example.com/hub/library/mariadb:11.8"},
		{Repository(v1beta1.MariaDB), "mirror.example.com/hub/library/mariadb"},
		{image(CleanupPodTemplate(Volume{ClaimName: "c"}, "orders", nil)), "mirror.example.com/hub/library/busybox:1.37"},
	} {
		if c.got != c.want {
			t.Errorf("image %s, want %s", c.got, c.want)
		}
	}
	if got := WithRegistry("quay.io/org/tool:1", mirror); got != "quay.io/org/tool:1" {
		t.Errorf("an image not on Docker Hub moved to %s", got)
	}
	// The tag of a server image is spec.version: a repository with a tag of its own, or
	// no reference at all, is refused and leaves the images as they were.
	for _, bad := range []Images{
		{PostgreSQL: "mirror.example.com/postgres:16", MySQL: DefaultMySQLImage, MariaDB: DefaultMariaDBImage, Cleanup: DefaultCleanupImage},
		{PostgreSQL: DefaultPostgreSQLImage, MySQL: "Not An Image", MariaDB: DefaultMariaDBImage, Cleanup: DefaultCleanupImage},
		{PostgreSQL: DefaultPostgreSQLImage, MySQL: DefaultMySQLImage, MariaDB: "", Cleanup: DefaultCleanupImage},
		{PostgreSQL: DefaultPostgreSQLImage, MySQL: DefaultMySQLImage, MariaDB: DefaultMariaDBImage, Cleanup: "busybox::1"},
	} {
		if err := SetImages(bad); err == nil {
			t.Errorf("SetImages(%+v) accepted", bad)
		}
	}
	if got := CurrentImages().MySQL; got != "registry.internal/db/mysql" {
		t.Errorf("a refused SetImages changed the images: %s", got)
	}
}

// One image per engine: the server's, whose clients the Jobs use. MariaDB's superuser
// and password variable are MySQL's.
func TestEngines(t *testing.T) {
	for _, c := range []struct {
		engine                     v1beta1.DatabaseEngine
		image, superuser, password string
	}{
		{v1beta1.PostgreSQL, "docker.io/library/postgres:18", "postgres", "PGPASSWORD"},
		{v1beta1.MySQL, "docker.io/library/mysql:8.4", "root", "MYSQL_PWD"},
		{v1beta1.MariaDB, "docker.io/library/mariadb:11.8", "root", "MYSQL_PWD"},
	} {
		version := c.image[strings.LastIndex(c.image, ":")+1:]
		if got := ServerImage(c.engine, version); got != c.image {
			t.Errorf("%s: ServerImage %s, want %s", c.engine, got, c.image)
		}
		if got := ServerImage(c.engine, version); got != c.image {
			t.Errorf("%s: ClientImage %s, want the server's %s", c.engine, got, c.image)
		}
		if Superuser(c.engine) != c.superuser || PasswordEnv(c.engine) != c.password {
			t.Errorf("%s: superuser %s, password in %s", c.engine, Superuser(c.engine), PasswordEnv(c.engine))
		}
	}
}

func testRestore(engine v1beta1.DatabaseEngine, version string) Restore {
	return Restore{
		Database: Database{Engine: engine, Version: version, Host: "orders.shop.svc", Port: 5432, Name: "postgres",
			SecretName: "orders-admin", UsernameKey: "username", PasswordKey: "password"},
		Volume: Volume{ClaimName: "nightly-storage", Path: "/backups"},
		File:   "nightly-20250101T030000Z.sql.gz",
		Labels: map[string]string{"app.kubernetes.io/instance": "orders"},
	}
}

// The restore Job runs the server's image with the backup volume mounted read-only, takes
// the superuser's credentials from the Secret only, and stays inside the volume whatever
// the file name says.
func TestRestoreJob(t *testing.T) {
	for _, c := range []struct {
		engine                   v1beta1.DatabaseEngine
		version, image, password string
	}{
		{v1beta1.PostgreSQL, "17", "docker.io/library/postgres:17", "PGPASSWORD"},
		{v1beta1.MySQL, "8.4", "docker.io/library/mysql:8.4", "MYSQL_PWD"},
		{v1beta1.MariaDB, "11.4", "docker.io/library/mariadb:11.4", "MYSQL_PWD"},
	} {
		t.Run(string(c.engine), func(t *testing.T) {
			job := RestoreJob("orders-restore", testRestore(c.engine, c.version))
			if job.Name != "orders-restore" || job.Namespace != "" || job.Labels["app.kubernetes.io/instance"] != "orders" {
				t.Errorf("job meta %+v", job.ObjectMeta)
			}
			pt := job.Spec.Template
			ctr := pt.Spec.Containers[0]
			env := envOf(ctr)
			if ctr.Image != c.image || ctr.Name != "restore" || ctr.Command[2] != RestoreScript {
				t.Errorf("container %s image %s", ctr.Name, ctr.Image)
			}
			if env["RESTORE_FILE"].Value != "/backup-volume/backups/nightly-20250101T030000Z.sql.gz" ||
				env["DB_ENGINE"].Value != string(c.engine) || env["DB_HOST"].Value != "orders.shop.svc" || env["DB_NAME"].Value != "postgres" {
				t.Errorf("env %+v", ctr.Env)
			}
			for _, name := range []string{"DB_USER", c.password} {
				e := env[name]
				if e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil || e.ValueFrom.SecretKeyRef.Name != "orders-admin" {
					t.Errorf("%s is not taken from the Secret: %+v", name, e)
				}
			}
			for _, e := range ctr.Env {
				if e.ValueFrom == nil && (strings.Contains(e.Name, "PASSWORD") || strings.Contains(e.Name, "PWD")) {
					t.Errorf("%s has a value in the Job's spec", e.Name)
				}
			}
			if m := ctr.VolumeMounts[0]; m.Name != "backup" || m.MountPath != MountPath || !m.ReadOnly {
				t.Errorf("backup volume mount %+v is not read-only at %s", m, MountPath)
			}
			if pt.Spec.Volumes[0].PersistentVolumeClaim.ClaimName != "nightly-storage" || pt.Spec.Volumes[1].EmptyDir == nil {
				t.Errorf("volumes %+v", pt.Spec.Volumes)
			}
			assertRestricted(t, pt.Spec)
			if *pt.Spec.SecurityContext.RunAsUser != 999 {
				t.Errorf("runs as %d", *pt.Spec.SecurityContext.RunAsUser)
			}
			// Only a lost connection is worth another pod.
			spec := job.Spec
			if spec.ActiveDeadlineSeconds == nil || spec.PodFailurePolicy == nil || len(spec.PodFailurePolicy.Rules) != 2 {
				t.Fatalf("job spec %+v", spec)
			}
			fail := spec.PodFailurePolicy.Rules[1].OnExitCodes
			if *fail.ContainerName != ctr.Name || len(fail.Values) != 5 || contains32(fail.Values, RestoreCannotConnect) || !contains32(fail.Values, RestoreIncompatible) {
				t.Errorf("fail-job exit codes %+v", fail)
			}
		})
	}

	r := testRestore(v1beta1.PostgreSQL, "17")
	for file, want := range map[string]string{
		"../../etc/passwd":        "/backup-volume/backups/etc/passwd",
		"/nightly.sql.gz":         "/backup-volume/backups/nightly.sql.gz",
		"eu/nightly.sql.gz":       "/backup-volume/backups/eu/nightly.sql.gz",
		"eu/../../x.sql.gz":       "/backup-volume/backups/x.sql.gz",
		"final-snapshot.sql.gz":   "/backup-volume/backups/final-snapshot.sql.gz",
		"./final-snapshot.sql.gz": "/backup-volume/backups/final-snapshot.sql.gz",
	} {
		r.File = file
		if got := r.FilePath(); got != want {
			t.Errorf("file %q: path %s, want %s", file, got, want)
		}
	}
	r.Volume.Path = "/"
	r.File = "../x.sql.gz"
	if got := r.FilePath(); got != "/backup-volume/x.sql.gz" {
		t.Errorf("at the volume's root: %s", got)
	}
}

func contains32(list []int32, v int32) bool {
	for _, e := range list {
		if e == v {
			return true
		}
	}
	return false
}
