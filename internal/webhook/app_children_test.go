package webhook

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	appcontroller "github.com/mooringhq/mooring/internal/controller/app"
)

// Each field of the children the App's builders make maps back to the App field it came
// from; the container's env list maps past the variables the builder puts first
// (APP_CONFIG, SERVICE_BINDING_ROOT, each env binding's).
func TestChildFieldsMapToTheApp(t *testing.T) {
	app := &mooringv1.App{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: mooringv1.AppSpec{
		Image: "nginx:1.27", Port: ptr.To[int32](80), Config: "x",
		Bindings: []mooringv1.AppBinding{ordersBinding(true), {Name: "files", Ref: mooringv1.AppBindingRef{Kind: mooringv1.BindingKindDatabaseCluster, Name: "f"}}},
		Env:      []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B=C", Value: "2"}},
	}}
	children := appcontroller.Children(app, dryRunResolved(app))
	var deployment client.Object
	for _, c := range children {
		if childKind(c) == "Deployment" {
			deployment = c
		}
	}
	env := deployment.(*appsv1.Deployment).Spec.Template.Spec.Containers[0].Env
	// APP_CONFIG, SERVICE_BINDING_ROOT, orders' 5 ConfigMap and 2 Secret entries, A, B=C.
	if len(env) != 11 || env[10].Name != "B=C" {
		t.Fatalf("the builder's env is %d variables ending %q, want 11 ending B=C: the test's indexes are stale", len(env), env[len(env)-1].Name)
	}
	tests := []struct {
		kind, child, want string
		exact             bool
	}{
		{"Deployment", container + ".env[10].name", "spec.env[1].name", true},
		{"Deployment", container + ".env[9].valueFrom.secretKeyRef.key", "spec.env[0].valueFrom.secretKeyRef.key", true},
		{"Deployment", container + ".env[0].name", "spec.config", false},
		{"Deployment", container + ".env[1].name", "spec.bindings", false},
		{"Deployment", container + ".env[4].valueFrom.configMapKeyRef.key", "spec.bindings[0].name", false},
		{"Deployment", container + ".envFrom[2].prefix", "spec.envFrom[2].prefix", true},
		{"Deployment", container + ".resources.limits[example.com/gpu]", "spec.resources.limits[example.com/gpu]", true},
		{"Deployment", container + ".readinessProbe.tcpSocket.port", "spec.port", false},
		{"Deployment", container + ".image", "spec.image", true},
		{"Deployment", container + ".imagePullPolicy", "spec", false},
		{"Deployment", "spec.template.spec.securityContext.runAsUser", "spec.securityContext.runAsUser", true},
		{"Deployment", "spec.template.spec.volumes[1].projected", "spec.bindings", false},
		{"Deployment", "spec.replicas", "spec.replicas", true},
		{"ConfigMap", "", "spec.config", false},
		{"ConfigMap", "data[config]", "spec.config", false},
		{"Service", "spec.ports[0].port", "spec.port", false},
		{"Ingress", "spec.rules[0].http.paths[0].path", "spec.expose.path", true},
		{"Ingress", "spec.rules[0].host", "spec.expose.host", true},
		{"Ingress", "spec.tls[0].secretName", "spec.expose.tls.secretName", true},
		{"Ingress", "spec.ingressClassName", "spec.expose.ingressClassName", true},
		{"HTTPRoute", "spec.parentRefs[0].sectionName", "spec.expose.gateway.sectionName", true},
		{"HTTPRoute", "spec.rules[0].matches[0].path", "spec.expose.path", false},
		{"HorizontalPodAutoscaler", "spec.maxReplicas", "spec.autoscaling.maxReplicas", true},
		{"Service", "metadata.generateName", "metadata.name", false},
		{"Service", "spec.portsExtra", "spec", false}, // a prefix only on a field boundary
	}
	for _, tt := range tests {
		m := childFields{app: app, kind: tt.kind, child: deployment}
		if got, exact := m.appField(tt.child); got != tt.want || exact != tt.exact {
			t.Errorf("%s %s maps to %s (exact %v), want %s (exact %v)", tt.kind, tt.child, got, exact, tt.want, tt.exact)
		}
	}
	// The message keeps the API server's words after the App's field, never its own
	// type prefix twice, and names the child's field when it is not the App's.
	m := childFields{app: app, kind: "Deployment", child: deployment}
	e := m.appError(container+".env[10].name", "FieldValueInvalid", `Invalid value: "B=C": a valid environment variable name must consist only of printable ASCII characters other than '='`)
	if want := `spec.env[1].name: Invalid value: "B=C": a valid environment variable name must consist only of printable ASCII characters other than '='`; e.Error() != want {
		t.Errorf("message %q, want %q", e.Error(), want)
	}
	e = m.appError(container+".readinessProbe.tcpSocket.port", "FieldValueRequired", "Required value")
	if want := "spec.port: Required value: (the Deployment's " + container + ".readinessProbe.tcpSocket.port)"; e.Error() != want {
		t.Errorf("message %q, want %q", e.Error(), want)
	}
}

// The baseline Pod Security Standard's checks ratchet the same way: an App stored with
// AppArmor Unconfined before they existed can still be scaled, not given a new violation.
func TestBaselineChecksRatchet(t *testing.T) {
	app := func(sc *corev1.PodSecurityContext, replicas int32) *mooringv1.App {
		return &mooringv1.App{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: mooringv1.AppSpec{
			Image: "nginx:1.27", Replicas: ptr.To(replicas), SecurityContext: sc}}
	}
	unconfined := func() *corev1.PodSecurityContext {
		return &corev1.PodSecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}}
	}
	stored := app(unconfined(), 1)
	if err := validateApp(stored); err == nil || !strings.Contains(err.Error(), "spec.securityContext.appArmorProfile.type") {
		t.Fatalf("create with AppArmor Unconfined: %v, want spec.securityContext.appArmorProfile.type rejected", err)
	}
	if err := validateAppUpdate(stored, app(unconfined(), 3)); err != nil {
		t.Errorf("scaling an App stored with AppArmor Unconfined: %v, want accepted", err)
	}
	withUser := unconfined()
	withUser.SELinuxOptions = &corev1.SELinuxOptions{User: "system_u"}
	if err := validateAppUpdate(stored, app(withUser, 1)); err == nil || !strings.Contains(err.Error(), "spec.securityContext.seLinuxOptions.user") ||
		strings.Contains(err.Error(), "appArmorProfile") {
		t.Errorf("adding an SELinux user: %v, want only spec.securityContext.seLinuxOptions.user rejected", err)
	}
}
