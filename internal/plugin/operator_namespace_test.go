package plugin

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

func operatorDeployment(ns, image string) *appsv1.Deployment {
	labels := map[string]string{"app.kubernetes.io/name": "mooring"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "mooring-controller-manager", Namespace: ns, Labels: labels},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(int32(1)), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Image: image}}}}},
	}
}

// Without --operator-namespace, doctor and version find the operator: by its Deployment's
// label in any namespace (a Helm release's), else by its leader lease, else mooring-system.
func TestFindOperatorNamespace(t *testing.T) {
	lease := func(ns string) *coordinationv1.Lease {
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: LeaseName, Namespace: ns}}
	}
	portal := operatorDeployment("platform", "mooring-portal:v1")
	portal.Name, portal.Labels = "mooring-portal", map[string]string{"app.kubernetes.io/name": "mooring-portal"}
	tests := map[string]struct {
		objs      []client.Object
		forbidden bool
		ns, how   string
		ambiguous bool
	}{
		"chart release":       {objs: []client.Object{operatorDeployment("platform", "m:v0.1.0"), portal, lease("platform")}, ns: "platform", how: "Deployment mooring-controller-manager"},
		"two releases":        {objs: []client.Object{operatorDeployment("b", "m"), operatorDeployment("a", "m")}, ns: "a", how: "namespaces a, b", ambiguous: true},
		"outside the cluster": {objs: []client.Object{lease("mooring-system"), &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "x"}}}, ns: "mooring-system", how: "leader lease"},
		"nothing":             {ns: "mooring-system", how: "in any namespace; the default"},
		"forbidden":           {objs: []client.Object{operatorDeployment("platform", "m")}, forbidden: true, ns: "mooring-system", how: "cannot look"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			// The API server selects any kind by metadata.name; the fake client needs an index.
			b := fake.NewClientBuilder().WithScheme(Scheme).WithObjects(tc.objs...).
				WithIndex(&coordinationv1.Lease{}, "metadata.name", func(o client.Object) []string { return []string{o.GetName()} })
			if tc.forbidden {
				b = b.WithInterceptorFuncs(interceptor.Funcs{List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
					return apierrors.NewForbidden(appsv1.Resource("deployments"), "", nil)
				}})
			}
			ns, how, ambiguous := findOperatorNamespace(t.Context(), b.Build())
			if ns != tc.ns || !strings.Contains(how, tc.how) || ambiguous != tc.ambiguous {
				t.Errorf("got %q, %q, %v; want %q, saying %q, %v", ns, how, ambiguous, tc.ns, tc.how, tc.ambiguous)
			}
		})
	}
}

// A Helm release in namespace platform: version and doctor find its operator there.
func TestVersionAndDoctorFindTheRelease(t *testing.T) {
	c, kubeconfig := rolesCluster(t)
	ctx := t.Context()
	must(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "platform"}}))
	must(t, c.Create(ctx, operatorDeployment("platform", "ghcr.io/mooringhq/mooring:v0.1.0")))
	run := func(args ...string) string {
		var out bytes.Buffer
		o := NewOptions(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &out})
		o.Color = "never"
		cmd := NewRootCommand(o)
		cmd.SetArgs(append([]string{"--kubeconfig", kubeconfig}, args...))
		_ = cmd.ExecuteContext(ctx) // doctor fails: nothing but the Deployment is installed
		return out.String()
	}
	if got := run("version"); !strings.Contains(got, "operator: v0.1.0 (namespace platform)\n") {
		t.Errorf("version:\n%s", got)
	}
	if got := run("version", "--operator-namespace", "mooring-system"); !strings.Contains(got, "operator: unknown (no Deployment labelled app.kubernetes.io/name=mooring in mooring-system;") {
		t.Errorf("version --operator-namespace mooring-system:\n%s", got)
	}
	got := run("doctor", "-n", "default")
	for _, want := range []string{
		`(?m)^PASS  operator namespace +platform \(the namespace of Deployment mooring-controller-manager, labelled app.kubernetes.io/name=mooring\)$`,
		`(?m)^FAIL  operator deployment mooring-controller-manager +0/1 replicas ready$`,
		`Secret platform/mooring-webhook-server-cert`,
		`lease platform/mooring.dev`,
	} {
		if !regexp.MustCompile(want).MatchString(got) {
			t.Errorf("doctor output does not match %q:\n%s", want, got)
		}
	}
}
