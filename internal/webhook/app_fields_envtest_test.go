package webhook_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
)

// Every optional App field is checked at admission, by the schema's CEL rules or the
// webhook, with a message that names the field.
func TestAppOptionalFieldsRejected(t *testing.T) {
	ns := env.Namespace(t)
	tests := map[string]struct {
		mutate         func(*mooringv1.App)
		field, message string
	}{
		"expose without port": {
			mutate: func(a *mooringv1.App) { a.Spec.Port = nil; a.Spec.Expose = &mooringv1.AppExpose{Host: "a.example.com"} },
			field:  "spec.expose", message: "needs spec.port",
		},
		"tls without host": {
			mutate: func(a *mooringv1.App) {
				a.Spec.Expose = &mooringv1.AppExpose{TLS: &mooringv1.AppTLS{SecretName: "cert"}}
			},
			field: "spec.expose.host", message: "required with spec.expose.tls",
		},
		"tls with neither secret nor issuer": {
			mutate: func(a *mooringv1.App) {
				a.Spec.Expose = &mooringv1.AppExpose{Host: "a.example.com", TLS: &mooringv1.AppTLS{}}
			},
			field: "spec.expose.tls", message: "needs secretName or issuer",
		},
		"gateway with tls": {
			mutate: func(a *mooringv1.App) {
				a.Spec.Expose = &mooringv1.AppExpose{Host: "a.example.com", TLS: &mooringv1.AppTLS{SecretName: "c"}, Gateway: &mooringv1.AppGatewayRef{Name: "gw"}}
			},
			field: "spec.expose.tls", message: "Gateway's listener",
		},
		"gateway with ingress class": {
			mutate: func(a *mooringv1.App) {
				a.Spec.Expose = &mooringv1.AppExpose{IngressClassName: ptr.To("nginx"), Gateway: &mooringv1.AppGatewayRef{Name: "gw"}}
			},
			field: "spec.expose.ingressClassName", message: "applies to an Ingress",
		},
		"path not absolute": {
			mutate: func(a *mooringv1.App) { a.Spec.Expose = &mooringv1.AppExpose{Path: "api"} },
			field:  "spec.expose.path", message: "should match",
		},
		"autoscaling min above max": {
			mutate: func(a *mooringv1.App) {
				a.Spec.Autoscaling = &mooringv1.AppAutoscaling{MinReplicas: ptr.To[int32](5), MaxReplicas: 2}
			},
			field: "spec.autoscaling.minReplicas", message: "must not exceed maxReplicas",
		},
		"autoscaling without max": {
			mutate: func(a *mooringv1.App) { a.Spec.Autoscaling = &mooringv1.AppAutoscaling{} },
			field:  "spec.autoscaling.maxReplicas", message: "",
		},
		"health check without any port": {
			mutate: func(a *mooringv1.App) {
				a.Spec.Port = nil
				a.Spec.HealthCheck = &mooringv1.AppHealthCheck{Path: "/healthz"}
			},
			field: "spec.healthCheck.port", message: "required when spec.port is not set",
		},
		"envFrom entry with both refs": {
			mutate: func(a *mooringv1.App) {
				a.Spec.EnvFrom = []corev1.EnvFromSource{{
					ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "a"}},
					SecretRef:    &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "b"}},
				}}
			},
			field: "spec.envFrom", message: "exactly one of configMapRef and secretRef",
		},
		"binding to an unknown kind": {
			mutate: func(a *mooringv1.App) {
				a.Spec.Bindings = []mooringv1.AppBinding{{Name: "db", Ref: mooringv1.AppBindingRef{Kind: "Deployment", Name: "x"}}}
			},
			field: "spec.bindings[0].ref.kind", message: "Unsupported value",
		},
		"binding name not a DNS label": {
			mutate: func(a *mooringv1.App) {
				a.Spec.Bindings = []mooringv1.AppBinding{{Name: "My_DB", Ref: mooringv1.AppBindingRef{Kind: "CacheInstance", Name: "x"}}}
			},
			field: "spec.bindings[0].name", message: "should match",
		},
		"SERVICE_BINDING_ROOT in env with bindings": {
			mutate: func(a *mooringv1.App) {
				a.Spec.Bindings = []mooringv1.AppBinding{{Name: "db", Ref: mooringv1.AppBindingRef{Kind: "CacheInstance", Name: "x"}}}
				a.Spec.Env = []corev1.EnvVar{{Name: "SERVICE_BINDING_ROOT", Value: "/x"}}
			},
			field: "spec.env", message: "SERVICE_BINDING_ROOT is set from spec.bindings",
		},
		"seccomp unconfined": {
			mutate: func(a *mooringv1.App) {
				a.Spec.SecurityContext = &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}}
			},
			field: "spec.securityContext.seccompProfile.type", message: "turns seccomp off",
		},
		"non-root as root": {
			mutate: func(a *mooringv1.App) {
				a.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](0)}
			},
			field: "spec.securityContext.runAsUser", message: "cannot run as user 0",
		},
		"AppArmor unconfined": {
			mutate: func(a *mooringv1.App) {
				a.Spec.SecurityContext = &corev1.PodSecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}}
			},
			field: "spec.securityContext.appArmorProfile.type", message: "Unconfined turns AppArmor off",
		},
		"SELinux type outside baseline": {
			mutate: func(a *mooringv1.App) {
				a.Spec.SecurityContext = &corev1.PodSecurityContext{SELinuxOptions: &corev1.SELinuxOptions{Type: "spc_t"}}
			},
			field: "spec.securityContext.seLinuxOptions.type", message: "must be empty or one of container_t",
		},
		"SELinux user": {
			mutate: func(a *mooringv1.App) {
				a.Spec.SecurityContext = &corev1.PodSecurityContext{SELinuxOptions: &corev1.SELinuxOptions{User: "system_u"}}
			},
			field: "spec.securityContext.seLinuxOptions.user", message: "forbids setting the SELinux user",
		},
		"SELinux role": {
			mutate: func(a *mooringv1.App) {
				a.Spec.SecurityContext = &corev1.PodSecurityContext{SELinuxOptions: &corev1.SELinuxOptions{Role: "system_r"}}
			},
			field: "spec.securityContext.seLinuxOptions.role", message: "forbids setting the SELinux role",
		},
		"sysctls": {
			mutate: func(a *mooringv1.App) {
				a.Spec.SecurityContext = &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "net.core.somaxconn", Value: "1024"}}}
			},
			field: "spec.securityContext.sysctls", message: "not set per App",
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

	// Everything at once, valid, is accepted.
	good := &mooringv1.App{
		ObjectMeta: metav1.ObjectMeta{Name: "full", Namespace: ns},
		Spec: mooringv1.AppSpec{
			Image: "nginx:1.27", Port: ptr.To[int32](8080), Command: []string{"/bin/server"}, Args: []string{"--v=2"},
			EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}},
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](1000),
				// What baseline allows: a confined AppArmor profile, a container SELinux type and any level.
				AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeRuntimeDefault},
				SELinuxOptions:  &corev1.SELinuxOptions{Type: "container_init_t", Level: "s0:c123,c456"}},
			Expose:      &mooringv1.AppExpose{Host: "shop.example.com", TLS: &mooringv1.AppTLS{Issuer: "letsencrypt"}},
			Autoscaling: &mooringv1.AppAutoscaling{MaxReplicas: 5},
			HealthCheck: &mooringv1.AppHealthCheck{Path: "/healthz"},
			Bindings:    []mooringv1.AppBinding{{Name: "db", Ref: mooringv1.AppBindingRef{Kind: "DatabaseCluster", Name: "orders"}, Env: true}},
		},
	}
	if err := env.Client.Create(ctx, good); err != nil {
		t.Fatalf("valid App with every optional field rejected: %v", err)
	}
	if good.Spec.Expose.Path != "/" || *good.Spec.Autoscaling.MinReplicas != 1 || *good.Spec.HealthCheck.PeriodSeconds != 10 || *good.Spec.HealthCheck.FailureThreshold != 3 {
		t.Errorf("defaults not applied: expose %+v autoscaling %+v healthCheck %+v", good.Spec.Expose, good.Spec.Autoscaling, good.Spec.HealthCheck)
	}
}
