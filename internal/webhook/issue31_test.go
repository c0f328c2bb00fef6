package webhook

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/api/v1beta1"
	"github.com/mooringhq/mooring/internal/engine"
)

func ordersBinding(env bool) mooringv1.AppBinding {
	return mooringv1.AppBinding{Name: "orders", Env: env, Ref: mooringv1.AppBindingRef{Kind: mooringv1.BindingKindDatabaseCluster, Name: "orders"}}
}

// Issue 31: what an App's children or its references can never take is refused, naming
// the App's field.
func TestValidateAppIssue31(t *testing.T) {
	q := resource.MustParse
	tests := map[string]struct {
		mutate func(*mooringv1.App)
		want   []string // nil to allow
	}{
		"env sets a binding's password": {func(a *mooringv1.App) {
			a.Spec.Bindings = []mooringv1.AppBinding{ordersBinding(true)}
			a.Spec.Env = []corev1.EnvVar{{Name: "LOG", Value: "1"}, {Name: "ORDERS_PASSWORD", Value: "x"}}
		}, []string{"spec.env[1].name", "ORDERS_PASSWORD", "spec.bindings[0]"}},
		"env sets a binding's host": {func(a *mooringv1.App) {
			a.Spec.Bindings = []mooringv1.AppBinding{{Name: "sessions-cache", Env: true, Ref: mooringv1.AppBindingRef{Kind: mooringv1.BindingKindCacheInstance, Name: "s"}}}
			a.Spec.Env = []corev1.EnvVar{{Name: "SESSIONS_CACHE_HOST", Value: "x"}}
		}, []string{"spec.env[0].name", "spec.bindings[0]"}},
		"binding without env": {func(a *mooringv1.App) {
			a.Spec.Bindings = []mooringv1.AppBinding{ordersBinding(false)}
			a.Spec.Env = []corev1.EnvVar{{Name: "ORDERS_PASSWORD", Value: "x"}}
		}, nil},
		"env with the binding's prefix only": {func(a *mooringv1.App) {
			a.Spec.Bindings = []mooringv1.AppBinding{ordersBinding(true)}
			a.Spec.Env = []corev1.EnvVar{{Name: "ORDERS_TIMEOUT", Value: "x"}}
		}, nil},
		"replicas at the maximum": {func(a *mooringv1.App) { a.Spec.Replicas = ptr.To(MaxAppReplicas) }, nil},
		"replicas above the maximum": {func(a *mooringv1.App) { a.Spec.Replicas = ptr.To(MaxAppReplicas + 1) },
			[]string{"spec.replicas", "must be at most 1000"}},
		"memory in millibytes": {func(a *mooringv1.App) {
			a.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: q("128m")}
		}, []string{"spec.resources.requests[memory]", "must be at least 1Mi"}},
		"memory of 100Ei": {func(a *mooringv1.App) {
			a.Spec.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: q("100Ei")}
		}, []string{"spec.resources.limits[memory]", "must be at most 1Ti"}},
		"cpu of 2000 cores": {func(a *mooringv1.App) {
			a.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: q("2k")}
		}, []string{"spec.resources.requests[cpu]", "must be at most 1024"}},
		"bounds": {func(a *mooringv1.App) {
			a.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: q("1m"), corev1.ResourceMemory: q("1Mi")}
			a.Spec.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: q("1024"), corev1.ResourceMemory: q("1Ti")}
		}, nil},
		"binding ref with a slash": {func(a *mooringv1.App) {
			a.Spec.Bindings = []mooringv1.AppBinding{{Name: "orders", Ref: mooringv1.AppBindingRef{Kind: mooringv1.BindingKindDatabaseCluster, Name: "shop/orders"}}}
		}, []string{"spec.bindings[0].ref.name", "must be the name of a DatabaseCluster"}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			app := &mooringv1.App{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: mooringv1.AppSpec{Image: "nginx:1.27"}}
			tt.mutate(app)
			err := validateApp(app)
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
					t.Errorf("%v does not say %q", err, w)
				}
			}
			// An App stored before these checks keeps taking unrelated changes.
			if tt.want != nil {
				changed := app.DeepCopy()
				changed.Labels = map[string]string{"touched": "yes"}
				if err := validateAppUpdate(app, changed); err != nil {
					t.Errorf("an unrelated change of an App that already had it is refused: %v", err)
				}
			}
		})
	}
}

// Defect 4: spec.secretName may not name a cluster's superuser Secret: its own, one
// Mooring made for another cluster, or the one an existing cluster will have.
func TestValidateSecretNameNotAdmin(t *testing.T) {
	objs := []client.Object{
		&v1beta1.DatabaseCluster{ObjectMeta: metav1.ObjectMeta{Name: "billing", Namespace: "shop"},
			Spec: v1beta1.DatabaseClusterSpec{Engine: v1beta1.PostgreSQL, Version: DefaultVersion(v1beta1.PostgreSQL)}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "gone-admin", Namespace: "shop", Labels: engine.Labels(v1beta1.DatabaseComponent, "gone")}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "team-admin", Namespace: "shop"}},
	}
	scheme := bootstrapScheme(t)
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	reader := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
	tests := map[string]struct {
		secretName string
		want       string // "" to allow
	}{
		"own admin Secret":                 {"orders-admin", "the cluster's own superuser Secret"},
		"admin Secret Mooring made":        {"gone-admin", "DatabaseCluster gone's superuser Secret"},
		"admin Secret an existing cluster": {"billing-admin", "DatabaseCluster billing's superuser Secret"},
		"a user's Secret ending in -admin": {"team-admin", ""},
		"nothing of that name":             {"nobody-admin", ""},
		"ordinary":                         {"orders-app", ""},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			db := cluster(v1beta1.PostgreSQL, DefaultVersion(v1beta1.PostgreSQL))
			db.Name, db.Namespace, db.Finalizers = "orders", "shop", nil
			db.Spec.SecretName = tt.secretName
			_, err := (DatabaseClusterValidator{Reader: reader, Reviewer: allowAll}).ValidateCreate(asUser("alice"), db)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("rejected: %v", err)
			case tt.want != "" && err == nil:
				t.Fatalf("allowed, want a rejection saying %q", tt.want)
			case tt.want != "" && (!apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.secretName") || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("%v does not name spec.secretName with %q", err, tt.want)
			}
		})
	}
}

// Every kind checks an image reference with validateImage: the CacheInstance refuses what
// the App refuses, and keeps taking changes with an image it already had.
func TestCacheInstanceImageLikeApp(t *testing.T) {
	for image, ok := range map[string]bool{
		"Memcached:1.6": false, "memcached:1.6": true, "registry.example.com/mirror/memcached:1.6.38": true,
		"memcached:": false, "memcached@sha256:abc": false, "": true,
	} {
		c := &mooringv1.CacheInstance{ObjectMeta: metav1.ObjectMeta{Name: "sessions"}, Spec: mooringv1.CacheInstanceSpec{Image: image}}
		_, err := CacheInstanceValidator{}.ValidateCreate(context.Background(), c)
		if ok != (err == nil) {
			t.Errorf("CacheInstance image %q: %v, want accepted %v", image, err, ok)
		}
		if err != nil && !strings.Contains(err.Error(), "spec.image") {
			t.Errorf("CacheInstance image %q: %v does not name spec.image", image, err)
		}
		if image != "" {
			appErr := validateApp(&mooringv1.App{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: mooringv1.AppSpec{Image: image}})
			if (appErr == nil) != (err == nil) {
				t.Errorf("image %q: App %v, CacheInstance %v: want the same answer", image, appErr, err)
			}
		}
		if _, err := (CacheInstanceValidator{}).ValidateUpdate(context.Background(), c.DeepCopy(), c); err != nil {
			t.Errorf("an unchanged image %q is refused: %v", image, err)
		}
	}
}
