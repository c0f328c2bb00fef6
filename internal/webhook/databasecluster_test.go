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

// Version changes the new image could not run on the existing data are refused at
// admission; the rest go through.
func TestValidateVersionChange(t *testing.T) {
	tests := map[string]struct {
		engine   v1beta1.DatabaseEngine
		from, to string
		want     string // "" to allow
	}{
		"postgresql unchanged":      {engine: v1beta1.PostgreSQL, from: "17", to: "17"},
		"postgresql minor release":  {engine: v1beta1.PostgreSQL, from: "17", to: "17.2"},
		"postgresql major upgrade":  {engine: v1beta1.PostgreSQL, from: "17", to: "18", want: "restore a backup"},
		"postgresql two majors":     {engine: v1beta1.PostgreSQL, from: "14", to: "16", want: "changes the major version"},
		"postgresql downgrade":      {engine: v1beta1.PostgreSQL, from: "18", to: "17", want: "downgrading PostgreSQL from 18 to 17 is not supported"},
		"mysql 8.0 to 8.4 in place": {engine: v1beta1.MySQL, from: "8.0", to: "8.4"},
		"mysql patch release":       {engine: v1beta1.MySQL, from: "8.4", to: "8.4.3"},
		"mysql downgrade":           {engine: v1beta1.MySQL, from: "8.4", to: "8.0", want: "downgrading MySQL"},
		"mysql skips a series":      {engine: v1beta1.MySQL, from: "5.7", to: "8.4", want: "changes the major version"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			err := validateVersionChange(cluster(tt.engine, tt.from), cluster(tt.engine, tt.to))
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("%s %s → %s rejected: %v", tt.engine, tt.from, tt.to, err)
			case tt.want != "" && err == nil:
				t.Fatalf("%s %s → %s allowed, want a rejection saying %q", tt.engine, tt.from, tt.to, tt.want)
			case tt.want != "" && (!strings.Contains(err.Error(), tt.want) || err.Field != "spec.version"):
				t.Fatalf("%s %s → %s: %v, want spec.version and %q", tt.engine, tt.from, tt.to, err, tt.want)
			}
		})
	}
}
