package webhook_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/internal/webhook"
)

// App fields the schema lets through but the App's children (Deployment, Ingress,
// HTTPRoute) would not take are refused at admission, with a message naming the App's
// field, instead of failing every apply of the child afterwards.
func TestAppFieldsInvalidForChildrenRejected(t *testing.T) {
	ns := env.Namespace(t)
	q := resource.MustParse
	withResources := func(r corev1.ResourceRequirements) func(*mooringv1.App) {
		return func(a *mooringv1.App) { a.Spec.Resources = r }
	}
	withPath := func(p string) func(*mooringv1.App) {
		return func(a *mooringv1.App) { a.Spec.Expose = &mooringv1.AppExpose{Path: p} }
	}
	tests := map[string]struct {
		mutate         func(*mooringv1.App)
		field, message string
	}{
		"fractional extended resource": {
			mutate: withResources(corev1.ResourceRequirements{
				Requests: corev1.ResourceList{"example.com/gpu": q("500m")}, Limits: corev1.ResourceList{"example.com/gpu": q("500m")}}),
			field: "spec.resources.requests[example.com/gpu]", message: "must be an integer",
		},
		"extended resource request without limit": {
			mutate: withResources(corev1.ResourceRequirements{Requests: corev1.ResourceList{"example.com/gpu": q("1")}}),
			field:  "spec.resources.limits", message: "Limit must be set for non overcommitable resources",
		},
		"extended resource request below its limit": {
			mutate: withResources(corev1.ResourceRequirements{
				Requests: corev1.ResourceList{"example.com/gpu": q("1")}, Limits: corev1.ResourceList{"example.com/gpu": q("2")}}),
			field: "spec.resources.requests", message: "must be equal to example.com/gpu limit of 2",
		},
		"resource without a domain that is not standard": {
			mutate: withResources(corev1.ResourceRequirements{Limits: corev1.ResourceList{"gpu": q("1")}}),
			field:  "spec.resources.limits[gpu]", message: "must be a standard resource for containers",
		},
		"huge pages without cpu or memory": {
			mutate: withResources(corev1.ResourceRequirements{
				Requests: corev1.ResourceList{"hugepages-2Mi": q("4Mi")}, Limits: corev1.ResourceList{"hugepages-2Mi": q("4Mi")}}),
			field: "spec.resources", message: "HugePages require cpu or memory",
		},
		"huge pages not whole pages": {
			mutate: withResources(corev1.ResourceRequirements{
				Limits: corev1.ResourceList{"hugepages-2Mi": q("3Mi"), corev1.ResourceMemory: q("64Mi")}}),
			field: "spec.resources.limits[hugepages-2Mi]", message: "is not positive integer multiple of hugepages-2Mi",
		},
		"resource claim referring to nothing": {
			mutate: withResources(corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "gpu"}}}),
			field:  "spec.resources.claims[0]", message: "must be one of the names in pod.spec.resourceClaims",
		},
		"Localhost seccomp profile without its profile": {
			mutate: func(a *mooringv1.App) {
				a.Spec.SecurityContext = &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost}}
			},
			field: "spec.securityContext.seccompProfile.localhostProfile", message: "must be set when seccomp type is Localhost",
		},
		"seccomp profile outside the profile directory": {
			mutate: func(a *mooringv1.App) {
				a.Spec.SecurityContext = &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{
					Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("../etc/profile.json")}}
			},
			field: "spec.securityContext.seccompProfile.localhostProfile", message: "must not contain '..'",
		},
		"negative user": {
			mutate: func(a *mooringv1.App) {
				a.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](-1)}
			},
			field: "spec.securityContext.runAsUser", message: "must be between 0 and 2147483647",
		},
		"request above limit": {
			mutate: withResources(corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceMemory: q("2Gi")}, Limits: corev1.ResourceList{corev1.ResourceMemory: q("1Gi")}}),
			field: "spec.resources.requests", message: "must be less than or equal to memory limit of 1Gi",
		},
		"envFrom Secret in another namespace": {
			mutate: func(a *mooringv1.App) {
				a.Spec.EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "other/creds"}}}}
			},
			field: "spec.envFrom[0].secretRef.name", message: "must be the name of a Secret",
		},
		"envFrom prefix with '='": {
			mutate: func(a *mooringv1.App) {
				a.Spec.EnvFrom = []corev1.EnvFromSource{{Prefix: "DB=", ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}}
			},
			field: "spec.envFrom[0].prefix", message: "other than '='",
		},
		"configMapKeyRef upper case": {
			mutate: func(a *mooringv1.App) {
				a.Spec.Env = []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: "Settings"}, Key: "a"}}}}
			},
			field: "spec.env[0].valueFrom.configMapKeyRef.name", message: "must be the name of a ConfigMap",
		},
		"secretKeyRef key with a slash": {
			mutate: func(a *mooringv1.App) {
				a.Spec.Env = []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}, Key: "a/b"}}}}
			},
			field: "spec.env[0].valueFrom.secretKeyRef.key", message: "must be a Secret key",
		},
		// The builder puts APP_CONFIG and the bindings' variables before spec.env: the
		// error still names the App's own entry.
		"env name after the config and a binding's variables": {
			mutate: func(a *mooringv1.App) {
				a.Spec.Config = "level=debug"
				a.Spec.Bindings = []mooringv1.AppBinding{{Name: "orders", Env: true, Ref: mooringv1.AppBindingRef{Kind: mooringv1.BindingKindDatabaseCluster, Name: "orders"}}}
				a.Spec.Env = []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B=C", Value: "2"}}
			},
			field: "spec.env[1].name", message: "other than '='",
		},
		"fieldRef to an unsupported path": {
			mutate: func(a *mooringv1.App) {
				a.Spec.Env = []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.containers"}}}}
			},
			field: "spec.env[0].valueFrom.fieldRef.fieldPath", message: "field label not supported",
		},
		"resourceFieldRef to an unknown resource": {
			mutate: func(a *mooringv1.App) {
				a.Spec.Env = []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.gpu"}}}}
			},
			field: "spec.env[0].valueFrom.resourceFieldRef.resource", message: "Unsupported value",
		},
		"config over a ConfigMap's 1 MiB": {
			mutate: func(a *mooringv1.App) { a.Spec.Config = strings.Repeat("x", 1<<20+1) },
			field:  "spec.config", message: "may not be more than 1048576 bytes",
		},
		"path with an empty segment": {mutate: withPath("/a//b"), field: "spec.expose.path", message: "must not contain '//'"},
		"path with ..":               {mutate: withPath("/a/../b"), field: "spec.expose.path", message: "must not contain '/../'"},
		"path ending in ..":          {mutate: withPath("/a/.."), field: "spec.expose.path", message: "cannot end with '/..'"},

		"upper-case ingress class": {
			mutate: func(a *mooringv1.App) { a.Spec.Expose = &mooringv1.AppExpose{IngressClassName: ptr.To("Nginx")} },
			field:  "spec.expose.ingressClassName", message: "must be the name of an IngressClass",
		},
		"IP address as host": {
			mutate: func(a *mooringv1.App) { a.Spec.Expose = &mooringv1.AppExpose{Host: "10.0.0.1"} },
			field:  "spec.expose.host", message: "not an IP address",
		},
		"HTTPRoute path with a space": {
			mutate: func(a *mooringv1.App) {
				a.Spec.Expose = &mooringv1.AppExpose{Path: "/a b", Gateway: &mooringv1.AppGatewayRef{Name: "public"}}
			},
			field: "spec.expose.path", message: "URL path characters",
		},
		"TLS Secret name not a DNS name": {
			mutate: func(a *mooringv1.App) {
				a.Spec.Expose = &mooringv1.AppExpose{Host: "a.example.com", TLS: &mooringv1.AppTLS{SecretName: "My_Cert"}}
			},
			field: "spec.expose.tls.secretName", message: "must be the name of a Secret",
		},
		"upper-case gateway namespace": {
			mutate: func(a *mooringv1.App) {
				a.Spec.Expose = &mooringv1.AppExpose{Gateway: &mooringv1.AppGatewayRef{Name: "public", Namespace: "Infra"}}
			},
			field: "spec.expose.gateway.namespace", message: "must be a namespace name",
		},
		"gateway listener not a DNS name": {
			mutate: func(a *mooringv1.App) {
				a.Spec.Expose = &mooringv1.AppExpose{Gateway: &mooringv1.AppGatewayRef{Name: "public", SectionName: "HTTPS_443"}}
			},
			field: "spec.expose.gateway.sectionName", message: "must be the name of a Gateway listener",
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			a := &mooringv1.App{
				// A name of its own: a case wrongly accepted does not fail the others.
				ObjectMeta: metav1.ObjectMeta{GenerateName: "bad-", Namespace: ns},
				Spec:       mooringv1.AppSpec{Image: "nginx:1.27", Port: ptr.To[int32](80)},
			}
			tt.mutate(a)
			mustReject(t, env.Client.Create(ctx, a), tt.field, tt.message)
		})
	}

	// The valid forms of the same fields are accepted.
	good := &mooringv1.App{
		ObjectMeta: metav1.ObjectMeta{Name: "good", Namespace: ns},
		Spec: mooringv1.AppSpec{
			Image: "nginx:1.27", Port: ptr.To[int32](8080),
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: q("250m"), "example.com/gpu": q("1"), "hugepages-2Mi": q("4Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: q("128Mi"), "example.com/gpu": q("1"), "hugepages-2Mi": q("4Mi")},
			},
			SecurityContext: &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{
				Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("profiles/app.json")}},
			Expose: &mooringv1.AppExpose{Host: "shop.example.com", Path: "/shop/v1.2/~user", IngressClassName: ptr.To("nginx-internal")},
		},
	}
	if err := env.Client.Create(ctx, good); err != nil {
		t.Fatalf("valid App rejected: %v", err)
	}
	routed := &mooringv1.App{
		ObjectMeta: metav1.ObjectMeta{Name: "routed", Namespace: ns},
		Spec: mooringv1.AppSpec{Image: "nginx:1.27", Port: ptr.To[int32](8080),
			Expose: &mooringv1.AppExpose{Gateway: &mooringv1.AppGatewayRef{Name: "public", Namespace: "infra", SectionName: "https"}}},
	}
	if err := env.Client.Create(ctx, routed); err != nil {
		t.Fatalf("valid App with a gateway rejected: %v", err)
	}
}

// An App stored before its children were checked at admission is not refused every
// change for a value it already had; a new bad value is refused, and so is the old one
// once fixed and set again. Through the validator itself: the API server would not store
// the App to start from.
func TestChildFieldChecksRatchet(t *testing.T) {
	ns := env.Namespace(t)
	v := webhook.AppValidator{Reader: env.Client, Reviewer: env.Client, Children: env.Client}
	app := func(path string, replicas int32) *mooringv1.App {
		return &mooringv1.App{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns}, Spec: mooringv1.AppSpec{
			Image: "nginx:1.27", Port: ptr.To[int32](80), Replicas: ptr.To(replicas), Expose: &mooringv1.AppExpose{Path: path}}}
	}
	stored := app("/a//b", 1)
	if _, err := v.ValidateCreate(ctx, stored); err == nil || !strings.Contains(err.Error(), "spec.expose.path") {
		t.Fatalf("create with path /a//b: %v, want spec.expose.path rejected", err)
	}
	if _, err := v.ValidateUpdate(ctx, stored, app("/a//b", 3)); err != nil {
		t.Errorf("scaling an App whose path was stored before the check: %v, want accepted", err)
	}
	if _, err := v.ValidateUpdate(ctx, stored, app("/c//d", 1)); err == nil || !strings.Contains(err.Error(), "spec.expose.path") {
		t.Errorf("changing the path to another bad one: %v, want spec.expose.path rejected", err)
	}
	if _, err := v.ValidateUpdate(ctx, stored, app("/c", 1)); err != nil {
		t.Errorf("fixing the path: %v", err)
	}

	// An update that leaves the spec alone (a label, the controller's finalizer) makes the
	// same children: it costs no dry run. A change of the spec does.
	counted := &countingCreator{Client: env.Client}
	v.Children = counted
	labelled := stored.DeepCopy()
	labelled.Labels = map[string]string{"team": "shop"}
	if _, err := v.ValidateUpdate(ctx, stored, labelled); err != nil || counted.n.Load() != 0 {
		t.Errorf("labelling the App: %v after %d dry runs, want accepted after none", err, counted.n.Load())
	}
	if _, err := v.ValidateUpdate(ctx, stored, app("/c", 1)); err != nil || counted.n.Load() == 0 {
		t.Errorf("changing the path: %v after %d dry runs, want accepted after some", err, counted.n.Load())
	}
}

// countingCreator counts the creates (the dry runs) it passes on.
type countingCreator struct {
	client.Client
	n atomic.Int32
}

func (c *countingCreator) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	c.n.Add(1)
	return c.Client.Create(ctx, obj, opts...)
}
