package webhook

import (
	"context"
	"errors"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
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

// creatorFunc answers a dry run as a test says.
type creatorFunc func(obj client.Object) error

func (f creatorFunc) Create(_ context.Context, obj client.Object, _ ...client.CreateOption) error {
	return f(obj)
}

// What the API server answers a child's dry run decides: a refusal of a field is the
// App's field's; a refusal that names no field still refuses, naming the child; any other
// answer (a quota, a namespace being deleted, a webhook that takes no dry runs, a timeout)
// says nothing about the App and admits it.
func TestDryRunAnswers(t *testing.T) {
	app := &mooringv1.App{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"}, Spec: mooringv1.AppSpec{
		Image: "nginx:1.27", Env: []corev1.EnvVar{{Name: "A=B"}}}}
	deploymentGK := schema.GroupKind{Group: "apps", Kind: "Deployment"}
	tests := map[string]struct {
		answer error
		want   []string // nil to admit
	}{
		"a field refused": {
			answer: apierrors.NewInvalid(deploymentGK, "", field.ErrorList{field.Invalid(
				field.NewPath("spec", "template", "spec", "containers").Index(0).Child("env").Index(0).Child("name"), "A=B", "a valid environment variable name must consist only of printable ASCII characters other than '='")}),
			want: []string{`spec.env[0].name: Invalid value: "A=B": a valid environment variable name`},
		},
		"refused naming no field": {
			answer: &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 422, Reason: metav1.StatusReasonInvalid,
				Message: "Deployment is invalid", Details: &metav1.StatusDetails{}}},
			want: []string{"spec: Invalid value: the Deployment built from the App would be refused: Deployment is invalid"},
		},
		"over quota":           {answer: apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "deployments"}, "", errors.New("exceeded quota"))},
		"no dry run supported": {answer: apierrors.NewBadRequest("admission webhook example.com does not support dry run")},
		"timeout":              {answer: context.DeadlineExceeded},
		"namespace gone":       {answer: apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, "shop")},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			var kinds []string
			errs := childErrors(context.Background(), creatorFunc(func(obj client.Object) error {
				kinds = append(kinds, childKind(obj))
				if obj.GetName() != "" || obj.GetGenerateName() != "web-" || obj.GetNamespace() != "shop" {
					t.Errorf("dry run of %s %q (generateName %q) in %q, want a name generated from web- in shop", childKind(obj), obj.GetName(), obj.GetGenerateName(), obj.GetNamespace())
				}
				return tt.answer
			}), app)
			if len(kinds) != 1 || kinds[0] != "Deployment" {
				t.Errorf("dry runs of %v, want the Deployment only (no port, config or expose)", kinds)
			}
			if len(errs) != len(tt.want) {
				t.Fatalf("errors %v, want %d saying %q", errs, len(tt.want), tt.want)
			}
			for i, w := range tt.want {
				if !strings.Contains(errs[i].Error(), w) {
					t.Errorf("error %q does not say %q", errs[i].Error(), w)
				}
			}
		})
	}
}
