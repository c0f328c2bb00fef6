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
		PostgreSQLClient: WithRegistry(DefaultPostgreSQLClient, mirror),
		MySQLClient:      "registry.internal/db/mysql",
		Cleanup:          WithRegistry(DefaultCleanupImage, mirror),
	})
	if err != nil {
		t.Fatal(err)
	}
	pg := PodTemplate(Dump{Database: Database{Engine: v1beta1.PostgreSQL, Version: "17"}, Volume: Volume{ClaimName: "c"}})
	my := PodTemplate(Dump{Database: Database{Engine: v1beta1.MySQL, Version: "8.4"}, Volume: Volume{ClaimName: "c"}})
	cleanup := CleanupPodTemplate(Volume{ClaimName: "c"}, "orders", nil)
	for got, want := range map[string]string{
		pg.Spec.Containers[0].Image:      "mirror.example.com/hub/library/postgres:17",
		my.Spec.Containers[0].Image:      "registry.internal/db/mysql:8.4",
		cleanup.Spec.Containers[0].Image: "mirror.example.com/hub/library/busybox:1.37",
	} {
		if got != want {
			t.Errorf("image %s, want %s", got, want)
		}
	}
	if got := WithRegistry("quay.io/org/tool:1", mirror); got != "quay.io/org/tool:1" {
		t.Errorf("an image not on Docker Hub moved to %s", got)
	}
	// The tag of a client image is the server's version: a repository with a tag of its
	// own, or no reference at all, is refused and leaves the images as they were.
	for _, bad := range []Images{
		{PostgreSQLClient: "mirror.example.com/postgres:16", MySQLClient: DefaultMySQLClient, Cleanup: DefaultCleanupImage},
		{PostgreSQLClient: DefaultPostgreSQLClient, MySQLClient: "Not An Image", Cleanup: DefaultCleanupImage},
		{PostgreSQLClient: DefaultPostgreSQLClient, MySQLClient: DefaultMySQLClient, Cleanup: "busybox::1"},
	} {
		if err := SetImages(bad); err == nil {
			t.Errorf("SetImages(%+v) accepted", bad)
		}
	}
	if got := CurrentImages().MySQLClient; got != "registry.internal/db/mysql" {
		t.Errorf("a refused SetImages changed the images: %s", got)
	}
}
