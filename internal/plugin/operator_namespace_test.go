package plugin

import (
	"bytes"
	"context"
	"fmt"
	"os"
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
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/mooringhq/mooring/internal/manager"
	"github.com/mooringhq/mooring/internal/testutil"
	"github.com/mooringhq/mooring/internal/version"
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
	// No operator runs: the Deployment's image tag is not taken for a running version.
	if got := run("version"); !strings.Contains(got, "operator: unknown (no leader lease platform/mooring.dev: no operator runs with --leader-elect") {
		t.Errorf("version:\n%s", got)
	}
	if got := run("version", "--operator-namespace", "mooring-system"); !strings.Contains(got, "operator: unknown (no leader lease mooring-system/mooring.dev:") {
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

// The operator's leader election publishes its version on the lease, and `version` reads
// it from there: while it leads, and, once it released the lease, as the last leader's.
func TestVersionFromTheLeaderLease(t *testing.T) {
	c, kubeconfig := rolesCluster(t)
	ctx := t.Context()
	const ns = "lease-version"
	must(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	old := version.Version
	t.Cleanup(func() { version.Version = old })
	version.Version = "v9.8.7-rc.1"
	opts := ctrl.Options{Scheme: Scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"}
	manager.SetLeaderElection(&opts, true, ns)
	mgr, err := ctrl.NewManager(cluster.env.Config, opts)
	must(t, err)
	mgrCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mgrCtx) }()
	stopped := false
	stopManager := func() error {
		if stopped {
			return nil
		}
		stopped = true
		stop()
		return <-done
	}
	t.Cleanup(func() { _ = stopManager() })
	run := func() string {
		var out bytes.Buffer
		o := NewOptions(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &out})
		cmd := NewRootCommand(o)
		cmd.SetArgs([]string{"--kubeconfig", kubeconfig, "version", "--operator-namespace", ns})
		if err := cmd.ExecuteContext(ctx); err != nil {
			t.Fatalf("version: %v\n%s", err, out.String())
		}
		return out.String()
	}
	host, err := os.Hostname()
	must(t, err)
	leading := regexp.MustCompile(`(?m)^operator: v9\.8\.7-rc\.1 \(` + regexp.QuoteMeta(version.Get().ShortRevision()) +
		`\), leader ` + regexp.QuoteMeta(host) + `_\S+ \(namespace ` + ns + `\)$`)
	testutil.Eventually(t, testutil.DefaultTimeout, "version to name the leader's build", func() error {
		if got := run(); !leading.MatchString(got) {
			return fmt.Errorf("version printed:\n%s", got)
		}
		return nil
	})
	if err := stopManager(); err != nil {
		t.Fatalf("manager: %v", err)
	}
	// The manager returns from Start while its elector may still be writing the released
	// lease, so the release is awaited, not assumed.
	testutil.Eventually(t, testutil.DefaultTimeout, "version to say nobody leads and name the last leader's build", func() error {
		if got := run(); !strings.Contains(got, "operator: unknown (lease "+ns+"/mooring.dev is held by nobody: no operator runs; the last leader ran v9.8.7-rc.1 (") {
			return fmt.Errorf("after the operator stopped, version printed:\n%s", got)
		}
		return nil
	})
}

// Labels an earlier leader left are not taken for the current one's, nor is an image tag
// taken for a version without saying so.
func TestOperatorVersion(t *testing.T) {
	lease := func(holder string, labels map[string]string) *coordinationv1.Lease {
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: LeaseName, Namespace: "ops", Labels: labels},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holder)}}
	}
	published := map[string]string{version.LeaseVersionLabel: "v0.4.0", version.LeaseRevisionLabel: "0123456789abcdef0123", version.LeaseHostLabel: "op-7d9f-abc12"}
	for name, tc := range map[string]struct {
		objs []client.Object
		want string
	}{
		"the leader's labels": {[]client.Object{lease("op-7d9f-abc12_1f2e", published)},
			"v0.4.0 (0123456789ab), leader op-7d9f-abc12_1f2e (namespace ops)"},
		"an older leader after a newer one": {[]client.Object{lease("op-55c4-zzz99_9a8b", published)},
			"unknown (the leader op-55c4-zzz99_9a8b publishes no version on lease ops/mooring.dev)"},
		"an older leader of a Deployment": {[]client.Object{lease("op-55c4-zzz99_9a8b", nil), operatorDeployment("ops", "ghcr.io/mooringhq/mooring:v0.2.0")},
			"v0.2.0 (the image tag of Deployment mooring-controller-manager; the leader op-55c4-zzz99_9a8b publishes no version on lease ops/mooring.dev; namespace ops)"},
		"released": {[]client.Object{lease("", published)},
			"unknown (lease ops/mooring.dev is held by nobody: no operator runs; the last leader ran v0.4.0 (0123456789abcdef0123))"},
		"no lease": {[]client.Object{operatorDeployment("ops", "ghcr.io/mooringhq/mooring:v0.2.0")},
			"unknown (no leader lease ops/mooring.dev: no operator runs with --leader-elect (make run does not; its start log line names its version))"},
	} {
		t.Run(name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(Scheme).WithObjects(tc.objs...).Build()
			got, err := operatorVersion(t.Context(), c, "ops")
			if err != nil {
				t.Fatal(err)
			}
			if got.String() != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}
