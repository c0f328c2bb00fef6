package webhook_test

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/api/v1alpha1"
	"github.com/mooringhq/mooring/api/v1beta1"
	"github.com/mooringhq/mooring/internal/testutil"
)

var ctx = context.Background()

func mustReject(t *testing.T, err error, field, message string) {
	t.Helper()
	if err == nil {
		t.Fatalf("accepted, want a rejection naming %s", field)
	}
	if !apierrors.IsInvalid(err) && !apierrors.IsForbidden(err) {
		t.Fatalf("error %q is not a validation error", err)
	}
	if !strings.Contains(err.Error(), field) || !strings.Contains(err.Error(), message) {
		t.Fatalf("error %q does not name %s with %q", err, field, message)
	}
}

func TestAppImageMustBeAReference(t *testing.T) {
	ns := env.Namespace(t)
	bad := &mooringv1.App{ObjectMeta: metav1.ObjectMeta{Name: "bad", Namespace: ns}, Spec: mooringv1.AppSpec{Image: "Nginx:Latest"}}
	mustReject(t, env.Client.Create(ctx, bad), "spec.image", "must be an image reference")

	good := &mooringv1.App{ObjectMeta: metav1.ObjectMeta{Name: "good", Namespace: ns}, Spec: mooringv1.AppSpec{Image: "nginx:1.27"}}
	if err := env.Client.Create(ctx, good); err != nil {
		t.Fatalf("valid App rejected: %v", err)
	}
	mustReject(t, tryUpdateObj(client.ObjectKeyFromObject(good), &mooringv1.App{}, func(a *mooringv1.App) {
		a.Spec.Image = "nginx::2"
	}), "spec.image", "must be an image reference")
}

func newDB(ns, name string, engine v1beta1.DatabaseEngine) *v1beta1.DatabaseCluster {
	return &v1beta1.DatabaseCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       v1beta1.DatabaseClusterSpec{Engine: engine},
	}
}

func TestDatabaseClusterDefaultsByEngine(t *testing.T) {
	ns := env.Namespace(t)
	for engine, version := range map[v1beta1.DatabaseEngine]string{v1beta1.PostgreSQL: "18", v1beta1.MySQL: "8.4"} {
		db := newDB(ns, string(engine), engine)
		if err := env.Client.Create(ctx, db); err != nil {
			t.Fatal(err)
		}
		if db.Spec.Version != version || db.Spec.SecretName != string(engine)+"-credentials" ||
			db.Spec.ReplicaCount != 1 || db.Spec.DeletionPolicy != v1beta1.DeletionRetain || db.Spec.Storage.Size == nil || db.Spec.Storage.Size.String() != "1Gi" {
			t.Errorf("%s defaults = %+v, want version %s, secret %s-credentials, 1 replica, Retain, 1Gi", engine, db.Spec, version, engine)
		}
	}
}

func TestDatabaseClusterRejections(t *testing.T) {
	ns := env.Namespace(t)
	db := newDB(ns, "unsupported", v1beta1.MySQL)
	db.Spec.Version = "17"
	mustReject(t, env.Client.Create(ctx, db), "spec.version", "Unsupported value")

	db = newDB(ns, "toomany", v1beta1.PostgreSQL)
	db.Spec.ReplicaCount = 6
	mustReject(t, env.Client.Create(ctx, db), "spec.replicaCount", "less than or equal to 5")

	db = newDB(ns, "oracle", "oracle")
	mustReject(t, env.Client.Create(ctx, db), "spec.engine", "Unsupported value")

	db = newDB(ns, "live", v1beta1.PostgreSQL)
	db.Spec.Storage.Size = ptr.To(resource.MustParse("2Gi"))
	if err := env.Client.Create(ctx, db); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(db)
	mustReject(t, tryUpdate(key, func(d *v1beta1.DatabaseCluster) {
		d.Spec.Engine = v1beta1.MySQL
		d.Spec.Version = "8.4"
	}), "spec.engine", "engine is immutable")
	mustReject(t, tryUpdate(key, func(d *v1beta1.DatabaseCluster) {
		d.Spec.Storage.Size = ptr.To(resource.MustParse("1Gi"))
	}), "spec.storage.size", "may grow but never shrink")
	if err := tryUpdate(key, func(d *v1beta1.DatabaseCluster) {
		d.Spec.Storage.Size = ptr.To(resource.MustParse("3Gi"))
	}); err != nil {
		t.Fatalf("growing storage rejected: %v", err)
	}
	mustReject(t, tryUpdate(key, func(d *v1beta1.DatabaseCluster) {
		d.Spec.SecretName = "other"
	}), "spec.secretName", "immutable")
}

// tryUpdate applies change to a fresh copy of the cluster and returns the API server's
// answer; conflicts with the controller's own writes are retried, anything else returned.
func tryUpdate(key client.ObjectKey, change func(*v1beta1.DatabaseCluster)) error {
	return tryUpdateObj(key, &v1beta1.DatabaseCluster{}, change)
}

func tryUpdateObj[T client.Object](key client.ObjectKey, obj T, change func(T)) error {
	var err error
	for range 20 {
		if err = env.Client.Get(ctx, key, obj); err != nil {
			return err
		}
		change(obj)
		if err = env.Client.Update(ctx, obj); !apierrors.IsConflict(err) {
			return err
		}
	}
	return err
}

// A client of the old version creates and edits; one of the new version reads and edits;
// nothing either version lacks is lost on the way through the conversion webhook.
func TestConversionThroughAPIServer(t *testing.T) {
	ns := env.Namespace(t)
	alpha := &v1alpha1.DatabaseCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: ns},
		Spec:       v1alpha1.DatabaseClusterSpec{Engine: "postgresql", Replicas: 3},
	}
	if err := env.Client.Create(ctx, alpha); err != nil {
		t.Fatalf("create v1alpha1: %v", err)
	}
	if alpha.Spec.Version != "18" {
		t.Errorf("v1alpha1 object came back with version %q, want the webhook default 18", alpha.Spec.Version)
	}

	beta := &v1beta1.DatabaseCluster{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(alpha), beta); err != nil {
		t.Fatalf("read as v1beta1: %v", err)
	}
	if beta.Spec.ReplicaCount != 3 || beta.Spec.SecretName != "orders-credentials" {
		t.Fatalf("v1beta1 view = %+v, want replicaCount 3 and defaulted secretName", beta.Spec)
	}

	// The DatabaseCluster controller writes status meanwhile: edit as a user would, retrying
	// on conflicts.
	key := client.ObjectKeyFromObject(alpha)
	testutil.Update(t, env.Client, key, &v1beta1.DatabaseCluster{}, func(b *v1beta1.DatabaseCluster) {
		b.Spec.Storage.Size = ptr.To(resource.MustParse("5Gi"))
		b.Spec.DeletionPolicy = v1beta1.DeletionDelete
	})
	testutil.Update(t, env.Client, key, &v1alpha1.DatabaseCluster{}, func(a *v1alpha1.DatabaseCluster) {
		a.Spec.Replicas = 2
	})

	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(alpha), beta); err != nil {
		t.Fatal(err)
	}
	if beta.Spec.ReplicaCount != 2 || beta.Spec.Storage.Size.String() != "5Gi" || beta.Spec.DeletionPolicy != v1beta1.DeletionDelete {
		t.Fatalf("after a v1alpha1 edit, v1beta1 spec = %+v; want replicaCount 2 and storage 5Gi, Delete kept", beta.Spec)
	}
	if _, leaked := beta.Annotations[v1alpha1.ConversionAnnotation]; leaked {
		t.Fatalf("conversion annotation visible in v1beta1: %v", beta.Annotations)
	}
}
