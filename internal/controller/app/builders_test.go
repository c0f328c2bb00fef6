package app

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
)

func newApp(mutate func(*mooringv1.App)) *mooringv1.App {
	a := &mooringv1.App{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team"},
		Spec:       mooringv1.AppSpec{Image: "nginx:1.27", Replicas: ptr.To[int32](2)},
	}
	if mutate != nil {
		mutate(a)
	}
	return a
}

func TestChildren(t *testing.T) {
	tests := map[string]struct {
		app       *mooringv1.App
		wantKinds []string
	}{
		"image only":      {app: newApp(nil), wantKinds: []string{"Deployment"}},
		"with config":     {app: newApp(func(a *mooringv1.App) { a.Spec.Config = "x=1" }), wantKinds: []string{"ConfigMap", "Deployment"}},
		"with port":       {app: newApp(func(a *mooringv1.App) { a.Spec.Port = ptr.To[int32](8080) }), wantKinds: []string{"Deployment", "Service"}},
		"config and port": {app: newApp(func(a *mooringv1.App) { a.Spec.Config = "x"; a.Spec.Port = ptr.To[int32](80) }), wantKinds: []string{"ConfigMap", "Deployment", "Service"}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			var got []string
			for _, c := range Children(tt.app, Resolved{}) {
				switch c.(type) {
				case *appsv1.Deployment:
					got = append(got, "Deployment")
				case *corev1.Service:
					got = append(got, "Service")
				case *corev1.ConfigMap:
					got = append(got, "ConfigMap")
				}
				if c.GetLabels()[mooringv1.ManagedByLabel] != mooringv1.ManagedBy || c.GetLabels()[mooringv1.InstanceLabel] != "web" {
					t.Errorf("%T %s labels = %v, want managed-by and instance labels", c, c.GetName(), c.GetLabels())
				}
			}
			if len(got) != len(tt.wantKinds) {
				t.Fatalf("children = %v, want %v", got, tt.wantKinds)
			}
			for i := range got {
				if got[i] != tt.wantKinds[i] {
					t.Fatalf("children = %v, want %v", got, tt.wantKinds)
				}
			}
		})
	}
}

func TestDeployment(t *testing.T) {
	tests := map[string]struct {
		app   *mooringv1.App
		check func(t *testing.T, d *appsv1.Deployment)
	}{
		"replicas and image": {
			app: newApp(nil),
			check: func(t *testing.T, d *appsv1.Deployment) {
				if *d.Spec.Replicas != 2 {
					t.Errorf("replicas = %d, want 2", *d.Spec.Replicas)
				}
				c := d.Spec.Template.Spec.Containers[0]
				if c.Name != ContainerName || c.Image != "nginx:1.27" {
					t.Errorf("container = %s %s, want app nginx:1.27", c.Name, c.Image)
				}
				if len(c.Ports) != 0 || c.ReadinessProbe != nil {
					t.Errorf("no port set but container has ports %v / probe %v", c.Ports, c.ReadinessProbe)
				}
				if _, ok := d.Spec.Template.Annotations[mooringv1.ConfigChecksumAnnotation]; ok {
					t.Error("config checksum annotation set without config")
				}
			},
		},
		"default replicas is one": {
			app: newApp(func(a *mooringv1.App) { a.Spec.Replicas = nil }),
			check: func(t *testing.T, d *appsv1.Deployment) {
				if *d.Spec.Replicas != 1 {
					t.Errorf("replicas = %d, want 1", *d.Spec.Replicas)
				}
			},
		},
		"selector matches pod labels": {
			app: newApp(nil),
			check: func(t *testing.T, d *appsv1.Deployment) {
				for k, v := range d.Spec.Selector.MatchLabels {
					if d.Spec.Template.Labels[k] != v {
						t.Errorf("selector %s=%s not on pod template labels %v", k, v, d.Spec.Template.Labels)
					}
				}
				if d.Spec.Selector.MatchLabels[mooringv1.ComponentLabel] != Component {
					t.Errorf("selector %v lacks the component label", d.Spec.Selector.MatchLabels)
				}
			},
		},
		"config becomes env and checksum": {
			app: newApp(func(a *mooringv1.App) { a.Spec.Config = "level=debug" }),
			check: func(t *testing.T, d *appsv1.Deployment) {
				c := d.Spec.Template.Spec.Containers[0]
				if len(c.Env) != 1 || c.Env[0].Name != ConfigEnvVar || c.Env[0].ValueFrom.ConfigMapKeyRef.Name != "web-config" || c.Env[0].ValueFrom.ConfigMapKeyRef.Key != ConfigKey {
					t.Errorf("env = %+v, want APP_CONFIG from web-config/config", c.Env)
				}
				sum := d.Spec.Template.Annotations[mooringv1.ConfigChecksumAnnotation]
				other := Deployment(newApp(func(a *mooringv1.App) { a.Spec.Config = "level=info" }), Resolved{}).Spec.Template.Annotations[mooringv1.ConfigChecksumAnnotation]
				if sum == "" || sum == other {
					t.Errorf("checksum %q must be set and differ for other config (%q)", sum, other)
				}
			},
		},
		"user env follows APP_CONFIG": {
			app: newApp(func(a *mooringv1.App) {
				a.Spec.Config = "x"
				a.Spec.Env = []corev1.EnvVar{{Name: "A", Value: "1"}}
			}),
			check: func(t *testing.T, d *appsv1.Deployment) {
				env := d.Spec.Template.Spec.Containers[0].Env
				if len(env) != 2 || env[0].Name != ConfigEnvVar || env[1].Name != "A" {
					t.Errorf("env = %+v, want APP_CONFIG then A", env)
				}
			},
		},
		"port adds container port and readiness probe": {
			app: newApp(func(a *mooringv1.App) { a.Spec.Port = ptr.To[int32](8080) }),
			check: func(t *testing.T, d *appsv1.Deployment) {
				c := d.Spec.Template.Spec.Containers[0]
				if len(c.Ports) != 1 || c.Ports[0].ContainerPort != 8080 {
					t.Errorf("ports = %+v, want 8080", c.Ports)
				}
				if c.ReadinessProbe == nil || c.ReadinessProbe.TCPSocket == nil {
					t.Errorf("readiness probe = %+v, want a TCP probe", c.ReadinessProbe)
				}
			},
		},
		"secure defaults": {
			app: newApp(nil),
			check: func(t *testing.T, d *appsv1.Deployment) {
				sc := d.Spec.Template.Spec.Containers[0].SecurityContext
				if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
					sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
					t.Errorf("security context = %+v, want no privilege escalation and RuntimeDefault seccomp", sc)
				}
				// The restricted Pod Security Standard: every capability dropped, not root.
				if sc == nil || sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 {
					t.Errorf("container capabilities = %+v, want drop [ALL] and nothing added", sc.Capabilities)
				}
				if pod := d.Spec.Template.Spec.SecurityContext; pod == nil || pod.RunAsNonRoot == nil || !*pod.RunAsNonRoot {
					t.Errorf("pod security context = %+v, want runAsNonRoot true", pod)
				}
				if d.Spec.Template.Spec.AutomountServiceAccountToken == nil || *d.Spec.Template.Spec.AutomountServiceAccountToken {
					t.Error("service account token is mounted by default")
				}
			},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) { tt.check(t, Deployment(tt.app, Resolved{})) })
	}
}

func TestServiceAndConfigMap(t *testing.T) {
	if Service(newApp(nil)) != nil || ConfigMap(newApp(nil)) != nil {
		t.Fatal("Service or ConfigMap built for an App without port or config")
	}
	svc := Service(newApp(func(a *mooringv1.App) { a.Spec.Port = ptr.To[int32](9000) }))
	if svc.Spec.Type != corev1.ServiceTypeClusterIP || svc.Spec.Ports[0].Port != 9000 || svc.Spec.Ports[0].TargetPort.IntVal != 9000 {
		t.Errorf("service spec = %+v, want ClusterIP 9000->9000", svc.Spec)
	}
	if svc.Spec.Selector[mooringv1.InstanceLabel] != "web" {
		t.Errorf("service selector = %v", svc.Spec.Selector)
	}
	cm := ConfigMap(newApp(func(a *mooringv1.App) { a.Spec.Config = "a: b" }))
	if cm.Name != "web-config" || cm.Data[ConfigKey] != "a: b" {
		t.Errorf("configmap = %s %v, want web-config with the config", cm.Name, cm.Data)
	}
}
