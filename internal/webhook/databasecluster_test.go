package webhook

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

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
		"mariadb patch release":     {engine: v1beta1.MariaDB, from: "11.8", to: "11.8.2"},
		"mariadb LTS upgrade":       {engine: v1beta1.MariaDB, from: "11.4", to: "11.8", want: "upgrading MariaDB from 11.4 to 11.8 changes the major version"},
		"mariadb 10.11 to 11.4":     {engine: v1beta1.MariaDB, from: "10.11", to: "11.4", want: "restore a backup"},
		"mariadb downgrade":         {engine: v1beta1.MariaDB, from: "11.8", to: "10.11", want: "downgrading MariaDB from 11.8 to 10.11 is not supported"},
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

// deleteRequest is the context the webhook server gives ValidateDelete for a DELETE
// with the given propagation policy ("" for none).
func deleteRequest(t *testing.T, policy metav1.DeletionPropagation) context.Context {
	t.Helper()
	opts := metav1.DeleteOptions{}
	if policy != "" {
		opts.PropagationPolicy = &policy
	}
	raw, err := json.Marshal(opts)
	if err != nil {
		t.Fatal(err)
	}
	return admission.NewContextWithRequest(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: admissionv1.Delete, Options: runtime.RawExtension{Raw: raw},
	}})
}

// Foreground deletion would take the StatefulSet and pods before the final snapshot: it
// is refused, with the way out, while a snapshot is to be taken; every other deletion
// goes through.
func TestValidateDeleteRefusesForegroundBeforeASnapshot(t *testing.T) {
	skipped := cluster(v1beta1.PostgreSQL, "17")
	skipped.Annotations = map[string]string{SkipFinalSnapshotAnnotation: "true"}
	retain := cluster(v1beta1.PostgreSQL, "17")
	retain.Spec.DeletionPolicy = v1beta1.DeletionRetain
	for name, tt := range map[string]struct {
		db     *v1beta1.DatabaseCluster
		policy metav1.DeletionPropagation
		refuse bool
	}{
		"snapshot, foreground":         {cluster(v1beta1.PostgreSQL, "17"), metav1.DeletePropagationForeground, true},
		"snapshot, background":         {cluster(v1beta1.PostgreSQL, "17"), metav1.DeletePropagationBackground, false},
		"snapshot, default":            {cluster(v1beta1.PostgreSQL, "17"), "", false},
		"snapshot skipped, foreground": {skipped, metav1.DeletePropagationForeground, false},
		"retain, foreground":           {retain, metav1.DeletePropagationForeground, false},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := (DatabaseClusterValidator{}).ValidateDelete(deleteRequest(t, tt.policy), tt.db)
			switch {
			case !tt.refuse && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.refuse && err == nil:
				t.Fatal("allowed, want a refusal")
			case tt.refuse && (!apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "background") ||
				!strings.Contains(err.Error(), SkipFinalSnapshotAnnotation)):
				t.Fatalf("refusal %v does not say to delete in the background or skip the snapshot", err)
			}
		})
	}
}

// MariaDB runs its long-term support series, 11.8 by default; a version Mooring does not
// run is refused naming spec.version and listing the ones it does.
func TestMariaDBVersions(t *testing.T) {
	db := &v1beta1.DatabaseCluster{ObjectMeta: metav1.ObjectMeta{Name: "db"}, Spec: v1beta1.DatabaseClusterSpec{Engine: v1beta1.MariaDB}}
	if err := (DatabaseClusterDefaulter{}).Default(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	if db.Spec.Version != "11.8" {
		t.Fatalf("default MariaDB version = %q, want 11.8", db.Spec.Version)
	}
	for _, v := range []string{"11.8", "11.4", "10.11"} {
		if err := validateDatabaseCluster(cluster(v1beta1.MariaDB, v)); err != nil {
			t.Errorf("MariaDB %s rejected: %v", v, err)
		}
	}
	for _, v := range []string{"10.6", "8.4", "18", "11"} {
		err := validateDatabaseCluster(cluster(v1beta1.MariaDB, v))
		if err == nil || !strings.Contains(err.Error(), "spec.version") || !strings.Contains(err.Error(), `"`+v+`"`) ||
			!strings.Contains(err.Error(), `supported values: "11.8", "11.4", "10.11"`) {
			t.Errorf("MariaDB %s = %v, want a rejection naming spec.version and %q with the supported versions", v, err, v)
		}
	}
	if got := SupportedVersions(v1beta1.PostgreSQL); !slices.Equal(got[:4], []string{"18", "17", "16", "15"}) {
		t.Errorf("PostgreSQL versions = %v, want 18 (the default), 17, 16, 15 first", got)
	}
	if engineNames[v1beta1.MariaDB] != "MariaDB" {
		t.Errorf("engineNames lacks MariaDB: %v", engineNames)
	}
}
