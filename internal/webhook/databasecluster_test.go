package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
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
	skipped.Annotations = map[string]string{v1beta1.SkipFinalSnapshotAnnotation: "true"}
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
				!strings.Contains(err.Error(), v1beta1.SkipFinalSnapshotAnnotation)):
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

// bootstrapScheme knows the kinds the DatabaseCluster webhook reads.
func bootstrapScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := mooringv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := v1beta1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	// The credentials Secret, whose username it checks.
	if err := corev1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// bootstrapped is a new cluster in namespace shop restored from Backup backup.
func bootstrapped(engine v1beta1.DatabaseEngine, backup, dump string) *v1beta1.DatabaseCluster {
	db := cluster(engine, DefaultVersion(engine))
	db.Namespace = "shop"
	db.Finalizers = nil
	db.Spec.Bootstrap = &v1beta1.BootstrapSpec{Backup: &v1beta1.BootstrapBackup{Name: backup, Dump: dump}}
	return db
}

// A new cluster restored from a Backup is refused, naming spec.bootstrap.backup.name and
// the Backup, when the Backup is missing or dumps a database of another engine. A Backup
// whose database is gone says nothing of the engine and is allowed.
func TestValidateCreateBootstrap(t *testing.T) {
	objs := []client.Object{
		&mooringv1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "orders-nightly", Namespace: "shop"},
			Spec: mooringv1.BackupSpec{DatabaseRef: mooringv1.DatabaseReference{Name: "orders"}, Schedule: "@daily"}},
		&mooringv1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "gone-nightly", Namespace: "shop"},
			Spec: mooringv1.BackupSpec{DatabaseRef: mooringv1.DatabaseReference{Name: "gone"}, Schedule: "@daily"}},
		&v1beta1.DatabaseCluster{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: "shop"},
			Spec: v1beta1.DatabaseClusterSpec{Engine: v1beta1.MariaDB, Version: "11.8"}},
		// The same name in another namespace is not the one the cluster means.
		&mooringv1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "elsewhere", Namespace: "other"},
			Spec: mooringv1.BackupSpec{DatabaseRef: mooringv1.DatabaseReference{Name: "orders"}, Schedule: "@daily"}},
	}
	reader := fake.NewClientBuilder().WithScheme(bootstrapScheme(t)).WithObjects(objs...).Build()
	tests := map[string]struct {
		db   *v1beta1.DatabaseCluster
		want []string // nil to allow
	}{
		"no bootstrap":             {db: cluster(v1beta1.MariaDB, "11.8")},
		"same engine":              {db: bootstrapped(v1beta1.MariaDB, "orders-nightly", "")},
		"same engine, named dump":  {db: bootstrapped(v1beta1.MariaDB, "orders-nightly", "orders-nightly-20250101030000.sql.gz")},
		"database gone":            {db: bootstrapped(v1beta1.PostgreSQL, "gone-nightly", "")},
		"missing backup":           {db: bootstrapped(v1beta1.MariaDB, "nightly", ""), want: []string{"spec.bootstrap.backup.name", `"nightly"`, "Backup nightly not found in namespace shop"}},
		"backup in another ns":     {db: bootstrapped(v1beta1.MariaDB, "elsewhere", ""), want: []string{"spec.bootstrap.backup.name", "Backup elsewhere not found in namespace shop"}},
		"another engine":           {db: bootstrapped(v1beta1.MySQL, "orders-nightly", ""), want: []string{"spec.bootstrap.backup.name", `"orders-nightly"`, "DatabaseCluster orders, a mariadb database", "spec.engine mysql"}},
		"another engine, postgres": {db: bootstrapped(v1beta1.PostgreSQL, "orders-nightly", ""), want: []string{"spec.bootstrap.backup.name", "spec.engine postgresql"}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := (DatabaseClusterValidator{Reader: reader, Reviewer: allowAll}).ValidateCreate(asUser("alice"), tt.db)
			switch {
			case tt.want == nil && err != nil:
				t.Fatalf("rejected: %v", err)
			case tt.want != nil && err == nil:
				t.Fatalf("allowed, want a rejection saying %q", tt.want)
			case tt.want != nil && !apierrors.IsInvalid(err):
				t.Fatalf("%v is not an Invalid error", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("%v does not say %q", err, w)
				}
			}
		})
	}

	// The field errors come together with the cluster's others.
	db := bootstrapped(v1beta1.MariaDB, "nightly", "")
	db.Spec.Version = "10.6"
	_, err := (DatabaseClusterValidator{Reader: reader, Reviewer: allowAll}).ValidateCreate(asUser("alice"), db)
	if err == nil || !strings.Contains(err.Error(), "spec.version") || !strings.Contains(err.Error(), "spec.bootstrap.backup.name") {
		t.Fatalf("unsupported version and missing Backup = %v, want both", err)
	}
}

// A Backup that cannot be read is the webhook's failure, not the cluster's: the error is
// returned as it is, not as a field error.
func TestValidateCreateBootstrapLookupFails(t *testing.T) {
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: "mooring.dev", Resource: "backups"}, "orders-nightly", errors.New("no RBAC"))
	reader := fake.NewClientBuilder().WithScheme(bootstrapScheme(t)).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
			return forbidden
		},
	}).Build()
	_, err := (DatabaseClusterValidator{Reader: reader}).ValidateCreate(context.Background(), bootstrapped(v1beta1.MariaDB, "orders-nightly", ""))
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "look up Backup shop/orders-nightly") {
		t.Fatalf("failed lookup = %v, want the Forbidden error, saying what was looked up", err)
	}
	if _, err := (DatabaseClusterValidator{}).ValidateCreate(context.Background(), bootstrapped(v1beta1.MariaDB, "orders-nightly", "")); err == nil {
		t.Fatal("a validator without a reader admitted a bootstrap it could not check")
	}
}

// spec.bootstrap is the cluster's origin: it cannot be set, changed or dropped after
// creation, whatever version the request is made in.
func TestValidateUpdateBootstrapImmutable(t *testing.T) {
	old := bootstrapped(v1beta1.MariaDB, "orders-nightly", "")
	for name, change := range map[string]func(*v1beta1.DatabaseCluster){
		"other backup": func(d *v1beta1.DatabaseCluster) { d.Spec.Bootstrap.Backup.Name = "other" },
		"named dump":   func(d *v1beta1.DatabaseCluster) { d.Spec.Bootstrap.Backup.Dump = "orders-nightly-1.sql.gz" },
		"dropped":      func(d *v1beta1.DatabaseCluster) { d.Spec.Bootstrap = nil },
	} {
		t.Run(name, func(t *testing.T) {
			db := old.DeepCopy()
			change(db)
			_, err := (DatabaseClusterValidator{Reviewer: allowAll}).ValidateUpdate(asUser("alice"), old, db)
			if err == nil || !strings.Contains(err.Error(), "spec.bootstrap") || !strings.Contains(err.Error(), "bootstrap is immutable") {
				t.Fatalf("update = %v, want spec.bootstrap immutable", err)
			}
		})
	}
	plain := cluster(v1beta1.MariaDB, "11.8")
	added := plain.DeepCopy()
	added.Spec.Bootstrap = &v1beta1.BootstrapSpec{Backup: &v1beta1.BootstrapBackup{Name: "orders-nightly"}}
	if _, err := (DatabaseClusterValidator{Reviewer: allowAll}).ValidateUpdate(asUser("alice"), plain, added); err == nil ||
		!strings.Contains(err.Error(), "can be set only when the cluster is created") {
		t.Fatalf("bootstrap added to an existing cluster = %v, want a rejection", err)
	}
	// Unchanged, it does not stand in the way of other updates (and the Backup is not
	// looked up again: the validator has no reader here).
	scaled := old.DeepCopy()
	scaled.Spec.ReplicaCount = 3
	if _, err := (DatabaseClusterValidator{}).ValidateUpdate(context.Background(), old, scaled); err != nil {
		t.Fatalf("scaling a bootstrapped cluster rejected: %v", err)
	}
}
