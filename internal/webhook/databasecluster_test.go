package webhook

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mooringhq/mooring/api/v1beta1"
)

func cluster(engine v1beta1.DatabaseEngine, version string) *v1beta1.DatabaseCluster {
	return &v1beta1.DatabaseCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Finalizers: []string{"mooring.dev/final-snapshot"}},
		Spec: v1beta1.DatabaseClusterSpec{Engine: engine, Version: version, SecretName: "db-credentials",
			DeletionPolicy: v1beta1.DeletionSnapshot},
	}
}

// A version removed from the supported list does not lock its clusters: an update that
// leaves the version alone (here the finalizer's removal) is allowed; moving to another
// unsupported version is not.
func TestUpdateKeepsAVersionNoLongerSupported(t *testing.T) {
	old := cluster(v1beta1.PostgreSQL, "13") // not in engineVersions any more
	released := old.DeepCopy()
	released.Finalizers = nil
	if _, err := (DatabaseClusterValidator{}).ValidateUpdate(context.Background(), old, released); err != nil {
		t.Fatalf("removing the finalizer of a cluster at an unlisted version rejected: %v", err)
	}
	moved := old.DeepCopy()
	moved.Spec.Version = "12"
	_, err := (DatabaseClusterValidator{}).ValidateUpdate(context.Background(), old, moved)
	if err == nil || !strings.Contains(err.Error(), "spec.version") || !strings.Contains(err.Error(), "Unsupported value") {
		t.Fatalf("change to unsupported version 12 = %v, want an Unsupported value error naming spec.version", err)
	}
}
