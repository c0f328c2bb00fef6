package main

import (
	"flag"
	"io"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mooringhq/mooring/api/v1beta1"
	"github.com/mooringhq/mooring/internal/controller/database"
	"github.com/mooringhq/mooring/internal/dump"
)

// parseImageFlags applies the image flags of args, as main does, and puts the defaults
// back when the test ends.
func parseImageFlags(t *testing.T, args ...string) error {
	t.Helper()
	_, err := parseImageFlagsWarnings(t, args...)
	return err
}

// parseImageFlagsWarnings is parseImageFlags, with what apply logs.
func parseImageFlagsWarnings(t *testing.T, args ...string) ([]string, error) {
	t.Helper()
	t.Cleanup(func() {
		if err := dump.SetImages(dump.DefaultImages()); err != nil {
			t.Error(err)
		}
	})
	fs := flag.NewFlagSet("mooring", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f := bindImageFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return f.warnings(), f.apply()
}

func db(engine v1beta1.DatabaseEngine, version string) *v1beta1.DatabaseCluster {
	return &v1beta1.DatabaseCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: "shop"},
		Spec:       v1beta1.DatabaseClusterSpec{Engine: engine, Version: version, ReplicaCount: 1, SecretName: "orders-credentials"},
	}
}

// images are the images of the pods Mooring builds for a PostgreSQL 17, a MySQL 8.4 and
// a MariaDB 11.8 cluster: servers, dumps, restores, credential changes, and the cleanup
// Job.
func images(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for name, d := range map[string]*v1beta1.DatabaseCluster{
		"postgresql": db(v1beta1.PostgreSQL, "17"), "mysql": db(v1beta1.MySQL, "8.4"), "mariadb": db(v1beta1.MariaDB, "11.8"),
	} {
		sts, err := database.StatefulSet(d)
		if err != nil {
			t.Fatal(err)
		}
		out[name] = sts.Spec.Template.Spec.Containers[0].Image
		target := database.DumpTarget(d)
		out[name+" dump"] = dump.PodTemplate(dump.Dump{Database: target, Volume: dump.Volume{ClaimName: "c"}}).Spec.Containers[0].Image
		out[name+" restore"] = dump.RestoreJob("r", dump.Restore{Database: target, Volume: dump.Volume{ClaimName: "c"}, File: "f.sql.gz"}).Spec.Template.Spec.Containers[0].Image
		out[name+" credentials"] = database.CredentialsJob(d, "0123456789").Spec.Template.Spec.Containers[0].Image
	}
	out["cleanup"] = dump.CleanupPodTemplate(dump.Volume{ClaimName: "c"}, "orders", nil).Spec.Containers[0].Image
	return out
}

// engineImages is what every pod of each engine runs, the server and its Jobs alike.
func engineImages(postgresql, mysql, mariadb, cleanup string) map[string]string {
	out := map[string]string{"cleanup": cleanup}
	for engine, image := range map[string]string{"postgresql": postgresql, "mysql": mysql, "mariadb": mariadb} {
		for _, pod := range []string{"", " dump", " restore", " credentials"} {
			out[engine+pod] = image
		}
	}
	return out
}

// One image per engine: the official server image at spec.version, which the dump,
// restore and credentials Jobs run too.
func TestDefaultImages(t *testing.T) {
	if err := parseImageFlags(t); err != nil {
		t.Fatal(err)
	}
	assertImages(t, engineImages("docker.io/library/postgres:17", "docker.io/library/mysql:8.4",
		"docker.io/library/mariadb:11.8", "docker.io/library/busybox:1.37"))
}

// --image-registry moves every image to a mirror that keeps Docker Hub's paths; a
// repository flag names one image outright and wins over the registry, for the server
// and its Jobs alike.
func TestImagesFromAMirror(t *testing.T) {
	err := parseImageFlags(t, "--image-registry=mirror.example.com/hub", "--mysql-image=registry.internal/db/mysql-server")
	if err != nil {
		t.Fatal(err)
	}
	assertImages(t, engineImages("mirror.example.com/hub/library/postgres:17", "registry.internal/db/mysql-server:8.4",
		"mirror.example.com/hub/library/mariadb:11.8", "mirror.example.com/hub/library/busybox:1.37"))

	if err := parseImageFlags(t, "--mariadb-image=registry.internal/db/mariadb"); err != nil {
		t.Fatal(err)
	}
	assertImages(t, engineImages("docker.io/library/postgres:17", "docker.io/library/mysql:8.4",
		"registry.internal/db/mariadb:11.8", "docker.io/library/busybox:1.37"))
}

// The client image flags of old are accepted, so that a deployment that still passes
// them starts, but change nothing: the Jobs run the server image. Each one set is logged.
func TestDeprecatedClientImageFlags(t *testing.T) {
	warnings, err := parseImageFlagsWarnings(t, "--postgresql-client-image=mirror.example.com/pg-client",
		"--mysql-client-image=mirror.example.com/mysql-client")
	if err != nil {
		t.Fatal(err)
	}
	assertImages(t, engineImages("docker.io/library/postgres:17", "docker.io/library/mysql:8.4",
		"docker.io/library/mariadb:11.8", "docker.io/library/busybox:1.37"))
	if len(warnings) != 2 || !strings.Contains(warnings[0], "--postgresql-client-image") || !strings.Contains(warnings[0], "--postgresql-image") ||
		!strings.Contains(warnings[1], "--mysql-client-image") {
		t.Errorf("warnings %q", warnings)
	}
	if warnings, _ := parseImageFlagsWarnings(t); len(warnings) != 0 {
		t.Errorf("warnings without deprecated flags: %q", warnings)
	}
	fs := flag.NewFlagSet("mooring", flag.ContinueOnError)
	bindImageFlags(fs)
	if usage := fs.Lookup("mysql-client-image").Usage; !strings.HasPrefix(usage, "Deprecated") {
		t.Errorf("usage of --mysql-client-image: %q", usage)
	}
}

// A repository with a tag (the tag is spec.version) or a value that is no image stops
// the operator at start rather than making pods that cannot pull.
func TestInvalidImageFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--postgresql-image=mirror.example.com/bitnami/postgresql:17"},
		{"--mysql-image=MySQL Server"},
		{"--mariadb-image=docker.io/library/mariadb@sha256:0000000000000000000000000000000000000000000000000000000000000000"},
		{"--image-registry=https://mirror.example.com"},
		{"--cleanup-image=busybox::1"},
	} {
		if err := parseImageFlags(t, args...); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}

func assertImages(t *testing.T, want map[string]string) {
	t.Helper()
	got := images(t)
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s image %s, want %s", k, got[k], w)
		}
	}
}
