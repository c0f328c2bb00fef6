package main

import (
	"flag"
	"io"
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
	t.Cleanup(func() {
		if err := database.SetImages(database.DefaultImages()); err != nil {
			t.Error(err)
		}
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
	return f.apply()
}

func db(engine v1beta1.DatabaseEngine, version string) *v1beta1.DatabaseCluster {
	return &v1beta1.DatabaseCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: "shop"},
		Spec:       v1beta1.DatabaseClusterSpec{Engine: engine, Version: version, ReplicaCount: 1, SecretName: "orders-credentials"},
	}
}

// images are the images of the pods Mooring builds for a PostgreSQL 17 and a MySQL 8.4
// cluster: servers, dumps, and the cleanup Job.
func images(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for name, d := range map[string]*v1beta1.DatabaseCluster{"postgresql": db(v1beta1.PostgreSQL, "17"), "mysql": db(v1beta1.MySQL, "8.4")} {
		sts, err := database.StatefulSet(d)
		if err != nil {
			t.Fatal(err)
		}
		out[name] = sts.Spec.Template.Spec.Containers[0].Image
		out[name+" dump"] = dump.PodTemplate(dump.Dump{Database: database.DumpTarget(d), Volume: dump.Volume{ClaimName: "c"}}).Spec.Containers[0].Image
	}
	out["cleanup"] = dump.CleanupPodTemplate(dump.Volume{ClaimName: "c"}, "orders", nil).Spec.Containers[0].Image
	return out
}

func TestDefaultImages(t *testing.T) {
	if err := parseImageFlags(t); err != nil {
		t.Fatal(err)
	}
	assertImages(t, map[string]string{
		"postgresql": "docker.io/bitnami/postgresql:17", "postgresql dump": "docker.io/library/postgres:17",
		"mysql": "docker.io/bitnami/mysql:8.4", "mysql dump": "docker.io/library/mysql:8.4",
		"cleanup": "docker.io/library/busybox:1.37",
	})
}

// --image-registry moves every image to a mirror that keeps Docker Hub's paths; a
// repository flag names one image outright and wins over the registry.
func TestImagesFromAMirror(t *testing.T) {
	err := parseImageFlags(t, "--image-registry=mirror.example.com/hub", "--mysql-image=registry.internal/db/mysql-server")
	if err != nil {
		t.Fatal(err)
	}
	assertImages(t, map[string]string{
		"postgresql": "mirror.example.com/hub/bitnami/postgresql:17", "postgresql dump": "mirror.example.com/hub/library/postgres:17",
		"mysql": "registry.internal/db/mysql-server:8.4", "mysql dump": "mirror.example.com/hub/library/mysql:8.4",
		"cleanup": "mirror.example.com/hub/library/busybox:1.37",
	})
}

// A repository with a tag (the tag is spec.version) or a value that is no image stops
// the operator at start rather than making pods that cannot pull.
func TestInvalidImageFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--postgresql-image=mirror.example.com/bitnami/postgresql:17"},
		{"--mysql-client-image=MySQL Client"},
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
