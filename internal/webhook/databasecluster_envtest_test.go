package webhook_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/api/v1alpha1"
	"github.com/mooringhq/mooring/api/v1beta1"
)

// createBeta creates a v1beta1 cluster, changed by mutate, and returns its key.
func createBeta(t *testing.T, ns, name string, mutate func(*v1beta1.DatabaseCluster)) client.ObjectKey {
	t.Helper()
	db := newDB(ns, name, v1beta1.PostgreSQL)
	mutate(db)
	if err := env.Client.Create(ctx, db); err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	return client.ObjectKeyFromObject(db)
}

// alphaWrite updates the cluster through v1alpha1 as `kubectl replace` with an old
// manifest does: v1alpha1 fields only, the conversion annotation set to annotation
// ("" drops it, as a manifest written for v1alpha1 has none).
func alphaWrite(key client.ObjectKey, annotation string) error {
	return tryUpdateObj(key, &v1alpha1.DatabaseCluster{}, func(a *v1alpha1.DatabaseCluster) {
		a.Spec.Replicas = 2
		delete(a.Annotations, v1alpha1.ConversionAnnotation)
		if annotation != "" {
			if a.Annotations == nil {
				a.Annotations = map[string]string{}
			}
			a.Annotations[v1alpha1.ConversionAnnotation] = annotation
		}
	})
}

// The v1beta1 update rules hold for writes made through v1alpha1, whose schema has none of
// the fields they guard: CEL runs only for the version a request is made in.
func TestDatabaseClusterV1alpha1WritesKeepV1beta1Rules(t *testing.T) {
	ns := env.Namespace(t)

	t.Run("secretName", func(t *testing.T) {
		key := createBeta(t, ns, "named", func(d *v1beta1.DatabaseCluster) { d.Spec.SecretName = "named-own" })
		// Dropped, it would be defaulted to named-credentials: a new password over the data.
		mustReject(t, alphaWrite(key, ""), "spec.secretName", "secretName is immutable once set")
		mustReject(t, alphaWrite(key, `{"secretName":"other","deletionPolicy":"Retain","storage":{"size":"1Gi"}}`),
			"spec.secretName", "secretName is immutable once set")
	})

	t.Run("storage size", func(t *testing.T) {
		key := createBeta(t, ns, "sized", func(d *v1beta1.DatabaseCluster) { d.Spec.Storage.Size = ptr.To(resource.MustParse("5Gi")) })
		mustReject(t, alphaWrite(key, ""), "spec.storage.size", "storage.size may grow but never shrink")
		mustReject(t, alphaWrite(key, `{"secretName":"sized-credentials","deletionPolicy":"Retain","storage":{"size":"2Gi"}}`),
			"spec.storage.size", "storage.size may grow but never shrink")
		mustReject(t, alphaWrite(key, `{"secretName":"sized-credentials","deletionPolicy":"Retain","storage":{"size":"0"}}`),
			"spec.storage.size", "must be greater than zero")
		if err := alphaWrite(key, `{"secretName":"sized-credentials","deletionPolicy":"Retain","storage":{"size":"6Gi"}}`); err != nil {
			t.Fatalf("growing storage through v1alpha1 rejected: %v", err)
		}
	})

	t.Run("deletionPolicy", func(t *testing.T) {
		key := createBeta(t, ns, "deleting", func(d *v1beta1.DatabaseCluster) { d.Spec.DeletionPolicy = v1beta1.DeletionDelete })
		mustReject(t, alphaWrite(key, ""), "spec.deletionPolicy", "cannot be changed through v1alpha1")
		mustReject(t, alphaWrite(key, `{"secretName":"deleting-credentials","deletionPolicy":"Sometimes"}`),
			"spec.deletionPolicy", "Unsupported value")
	})

	t.Run("size zero on create", func(t *testing.T) {
		alpha := &v1alpha1.DatabaseCluster{
			ObjectMeta: metav1.ObjectMeta{Name: "empty", Namespace: ns,
				Annotations: map[string]string{v1alpha1.ConversionAnnotation: `{"storage":{"size":"0"}}`}},
			Spec: v1alpha1.DatabaseClusterSpec{Engine: "postgresql"},
		}
		mustReject(t, env.Client.Create(ctx, alpha), "spec.storage.size", "must be greater than zero")
	})

	// A cluster with nothing but defaults in the v1beta1-only fields loses nothing to a
	// v1alpha1 manifest without the annotation: the write goes through.
	t.Run("defaults", func(t *testing.T) {
		key := createBeta(t, ns, "plain", func(*v1beta1.DatabaseCluster) {})
		if err := alphaWrite(key, ""); err != nil {
			t.Fatalf("v1alpha1 write over a cluster with default storage, secret and policy rejected: %v", err)
		}
	})
}

// What the StatefulSet could not take is refused at admission, naming the field: another
// storage class for the data volumes, a major version upgrade the image cannot do in place,
// a downgrade. MySQL 8.0 to 8.4 is upgraded in place by the server and is allowed.
func TestDatabaseClusterChangesTheStatefulSetCannotTake(t *testing.T) {
	ns := env.Namespace(t)
	key := createBeta(t, ns, "classy", func(d *v1beta1.DatabaseCluster) {
		d.Spec.Version = "17"
		d.Spec.Storage.StorageClassName = ptr.To("fast")
	})
	mustReject(t, tryUpdate(key, func(d *v1beta1.DatabaseCluster) { d.Spec.Storage.StorageClassName = ptr.To("slow") }),
		"spec.storage.storageClassName", "storage.storageClassName is immutable")
	mustReject(t, tryUpdate(key, func(d *v1beta1.DatabaseCluster) { d.Spec.Storage.StorageClassName = nil }),
		"spec.storage.storageClassName", "storage.storageClassName is immutable")
	plain := createBeta(t, ns, "plain-class", func(*v1beta1.DatabaseCluster) {})
	mustReject(t, tryUpdate(plain, func(d *v1beta1.DatabaseCluster) { d.Spec.Storage.StorageClassName = ptr.To("fast") }),
		"spec.storage.storageClassName", "storage.storageClassName is immutable")
	// Through v1alpha1 without the annotation, the class would be dropped.
	mustReject(t, alphaWrite(key, ""), "spec.storage.storageClassName", "storage.storageClassName is immutable")
	mustReject(t, tryUpdate(key, func(d *v1beta1.DatabaseCluster) { d.Spec.Version = "18" }),
		"spec.version", "restore a backup of this one into it")
	mustReject(t, tryUpdate(key, func(d *v1beta1.DatabaseCluster) { d.Spec.Version = "16" }),
		"spec.version", "downgrading PostgreSQL from 17 to 16 is not supported")

	mysql := newDB(ns, "lts", v1beta1.MySQL)
	mysql.Spec.Version = "8.0"
	if err := env.Client.Create(ctx, mysql); err != nil {
		t.Fatal(err)
	}
	if err := tryUpdate(client.ObjectKeyFromObject(mysql), func(d *v1beta1.DatabaseCluster) { d.Spec.Version = "8.4" }); err != nil {
		t.Fatalf("MySQL 8.0 to 8.4 rejected: %v", err)
	}
	mustReject(t, tryUpdate(client.ObjectKeyFromObject(mysql), func(d *v1beta1.DatabaseCluster) { d.Spec.Version = "8.0" }),
		"spec.version", "downgrading MySQL from 8.4 to 8.0")
}

// MariaDB clusters get 11.8 unless they name one of its LTS series; any other version is
// refused naming spec.version and the versions Mooring runs. v1alpha1 takes the engine too.
func TestDatabaseClusterMariaDB(t *testing.T) {
	ns := env.Namespace(t)
	db := newDB(ns, "maria", v1beta1.MariaDB)
	if err := env.Client.Create(ctx, db); err != nil {
		t.Fatalf("MariaDB cluster rejected: %v", err)
	}
	if db.Spec.Version != "11.8" {
		t.Fatalf("MariaDB default version = %q, want 11.8", db.Spec.Version)
	}
	old := newDB(ns, "old-maria", v1beta1.MariaDB)
	old.Spec.Version = "10.6"
	mustReject(t, env.Client.Create(ctx, old), "spec.version", `supported values: "11.8", "11.4", "10.11"`)

	alpha := &v1alpha1.DatabaseCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "alpha-maria", Namespace: ns},
		Spec:       v1alpha1.DatabaseClusterSpec{Engine: "mariadb", Version: "10.11"},
	}
	if err := env.Client.Create(ctx, alpha); err != nil {
		t.Fatalf("MariaDB cluster rejected through v1alpha1: %v", err)
	}
	lts := &v1beta1.DatabaseCluster{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(alpha), lts); err != nil {
		t.Fatal(err)
	}
	if lts.Spec.Engine != v1beta1.MariaDB || lts.Spec.Version != "10.11" {
		t.Fatalf("v1alpha1 MariaDB read as v1beta1 = %s %s", lts.Spec.Engine, lts.Spec.Version)
	}
	mustReject(t, tryUpdate(client.ObjectKeyFromObject(lts), func(d *v1beta1.DatabaseCluster) { d.Spec.Version = "11.8" }),
		"spec.version", "upgrading MariaDB from 10.11 to 11.8 changes the major version")
}

// createBackup creates a Backup of the DatabaseCluster database.
func createBackup(t *testing.T, ns, name, database string) {
	t.Helper()
	b := &mooringv1.Backup{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       mooringv1.BackupSpec{DatabaseRef: mooringv1.DatabaseReference{Name: database}, Schedule: "@daily"},
	}
	if err := env.Client.Create(ctx, b); err != nil {
		t.Fatalf("create Backup %s: %v", name, err)
	}
}

// restoreFrom sets spec.bootstrap to restore Backup backup's dump ("" for the newest).
func restoreFrom(backup, dump string) func(*v1beta1.DatabaseCluster) {
	return func(d *v1beta1.DatabaseCluster) {
		d.Spec.Bootstrap = &v1beta1.BootstrapSpec{Backup: &v1beta1.BootstrapBackup{Name: backup, Dump: dump}}
	}
}

// A cluster is created from a Backup only when the Backup exists in its namespace and dumps
// a database of its engine; the rejections name spec.bootstrap.backup.name and the Backup.
// spec.bootstrap cannot change afterwards, in either version.
func TestDatabaseClusterBootstrap(t *testing.T) {
	ns := env.Namespace(t)
	createBeta(t, ns, "orders", func(d *v1beta1.DatabaseCluster) { d.Spec.Engine = v1beta1.MariaDB })
	createBackup(t, ns, "orders-nightly", "orders")
	createBackup(t, ns, "gone-nightly", "gone")

	missing := newDB(ns, "missing", v1beta1.MariaDB)
	restoreFrom("nightly", "")(missing)
	mustReject(t, env.Client.Create(ctx, missing), "spec.bootstrap.backup.name", "Backup nightly not found in namespace "+ns)

	other := newDB(ns, "other-engine", v1beta1.PostgreSQL)
	restoreFrom("orders-nightly", "")(other)
	mustReject(t, env.Client.Create(ctx, other), "spec.bootstrap.backup.name",
		"Backup orders-nightly dumps DatabaseCluster orders, a mariadb database, and its dumps cannot be restored into spec.engine postgresql")

	badDump := newDB(ns, "bad-dump", v1beta1.MariaDB)
	restoreFrom("orders-nightly", "../orders.sql.gz")(badDump)
	mustReject(t, env.Client.Create(ctx, badDump), "spec.bootstrap.backup.dump", "should match")

	key := createBeta(t, ns, "restored", func(d *v1beta1.DatabaseCluster) {
		d.Spec.Engine = v1beta1.MariaDB
		restoreFrom("orders-nightly", "orders-nightly-20250101030000.sql.gz")(d)
	})
	// The Backup's database is gone: nothing tells its engine, and the restore Job will.
	createBeta(t, ns, "reborn", restoreFrom("gone-nightly", ""))

	mustReject(t, tryUpdate(key, func(d *v1beta1.DatabaseCluster) { d.Spec.Bootstrap.Backup.Name = "gone-nightly" }),
		"spec.bootstrap", "bootstrap is immutable")
	mustReject(t, tryUpdate(key, func(d *v1beta1.DatabaseCluster) { d.Spec.Bootstrap = nil }),
		"spec.bootstrap", "bootstrap is immutable")
	mustReject(t, tryUpdateObj(key, &v1alpha1.DatabaseCluster{}, func(a *v1alpha1.DatabaseCluster) { a.Spec.Bootstrap.Backup.Dump = "" }),
		"spec.bootstrap", "bootstrap is immutable")
	mustReject(t, tryUpdateObj(key, &v1alpha1.DatabaseCluster{}, func(a *v1alpha1.DatabaseCluster) { a.Spec.Bootstrap = nil }),
		"spec.bootstrap", "bootstrap is immutable")
	plain := createBeta(t, ns, "plain", func(*v1beta1.DatabaseCluster) {})
	mustReject(t, tryUpdate(plain, restoreFrom("gone-nightly", "")), "spec.bootstrap", "can be set only when the cluster is created")
	if err := tryUpdate(key, func(d *v1beta1.DatabaseCluster) { d.Spec.ReplicaCount = 2 }); err != nil {
		t.Fatalf("scaling a restored cluster rejected: %v", err)
	}
	alpha := &v1alpha1.DatabaseCluster{}
	if err := env.Client.Get(ctx, key, alpha); err != nil {
		t.Fatal(err)
	}
	if b := alpha.Spec.Bootstrap; b == nil || b.Backup == nil || b.Backup.Name != "orders-nightly" ||
		b.Backup.Dump != "orders-nightly-20250101030000.sql.gz" || strings.Contains(alpha.Annotations[v1alpha1.ConversionAnnotation], "bootstrap") {
		t.Fatalf("v1alpha1 view of the restored cluster: bootstrap %+v, annotations %v", b, alpha.Annotations)
	}
}
