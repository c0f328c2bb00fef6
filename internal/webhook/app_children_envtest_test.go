package webhook_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
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
			field: "spec.resources.requests[example.com/gpu]", message: "must be a whole number",
		},
		"extended resource request without limit": {
			mutate: withResources(corev1.ResourceRequirements{Requests: corev1.ResourceList{"example.com/gpu": q("1")}}),
			field:  "spec.resources.limits[example.com/gpu]", message: "cannot be overcommitted",
		},
		"extended resource request below its limit": {
			mutate: withResources(corev1.ResourceRequirements{
				Requests: corev1.ResourceList{"example.com/gpu": q("1")}, Limits: corev1.ResourceList{"example.com/gpu": q("2")}}),
			field: "spec.resources.requests[example.com/gpu]", message: "must be equal to the limit 2",
		},
		"resource without a domain that is not standard": {
			mutate: withResources(corev1.ResourceRequirements{Limits: corev1.ResourceList{"gpu": q("1")}}),
			field:  "spec.resources.limits[gpu]", message: "must be cpu, memory, ephemeral-storage",
		},
		"huge pages without cpu or memory": {
			mutate: withResources(corev1.ResourceRequirements{
				Requests: corev1.ResourceList{"hugepages-2Mi": q("4Mi")}, Limits: corev1.ResourceList{"hugepages-2Mi": q("4Mi")}}),
			field: "spec.resources", message: "huge pages need a cpu or memory",
		},
		"huge pages not whole pages": {
			mutate: withResources(corev1.ResourceRequirements{
				Limits: corev1.ResourceList{"hugepages-2Mi": q("3Mi"), corev1.ResourceMemory: q("64Mi")}}),
			field: "spec.resources.limits[hugepages-2Mi]", message: "whole number of 2Mi pages",
		},
		"resource claim referring to nothing": {
			mutate: withResources(corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "gpu"}}}),
			field:  "spec.resources.claims[0].name", message: "refers to no resource claim",
		},
		"Localhost seccomp profile without its profile": {
			mutate: func(a *mooringv1.App) {
				a.Spec.SecurityContext = &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost}}
			},
			field: "spec.securityContext.seccompProfile.localhostProfile", message: "must name the profile when type is Localhost",
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
		"path with an empty segment": {mutate: withPath("/a//b"), field: "spec.expose.path", message: "must not contain '//'"},
		"path with ..":               {mutate: withPath("/a/../b"), field: "spec.expose.path", message: "must not contain '/../'"},
		"path ending in ..":          {mutate: withPath("/a/.."), field: "spec.expose.path", message: "must not end with '/..'"},

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
