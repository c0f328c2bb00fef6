package real

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/kube"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/mooringhq/mooring/internal/devenv"
	"github.com/mooringhq/mooring/internal/testutil"
)

// releaseNS is where the chart installs the operator, under the restricted Pod Security
// Standard, as a platform team would.
const releaseNS = "mooring-system"

// installChart creates the release namespace with the restricted standard enforced,
// installs charts/mooring with the image built for this run, and waits until both
// operator replicas run on the real node, one of them leads, and the webhooks answer.
func installChart(ctx context.Context) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: releaseNS, Labels: map[string]string{
		"pod-security.kubernetes.io/enforce": "restricted",
		"pod-security.kubernetes.io/warn":    "restricted",
	}}}
	if _, err := suite.cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return err
	}
	ch, err := loader.Load(filepath.Join(suite.root, "charts", "mooring"))
	if err != nil {
		return err
	}
	flags := genericclioptions.NewConfigFlags(false)
	kubeconfig, namespace := suite.cluster.KubeconfigPath, releaseNS
	flags.KubeConfig, flags.Namespace = &kubeconfig, &namespace
	cfg := action.NewConfiguration()
	if err := cfg.Init(flags, releaseNS, "secret"); err != nil {
		return err
	}
	in := action.NewInstall(cfg)
	in.ReleaseName, in.Namespace = "mooring", releaseNS
	in.WaitStrategy, in.Timeout = kube.HookOnlyStrategy, 2*time.Minute
	values := map[string]any{"image": map[string]any{
		"repository": "ghcr.io/mooringhq/mooring", "tag": imageTag, "pullPolicy": "IfNotPresent",
	}}
	if _, err := in.RunWithContext(ctx, ch, values); err != nil {
		return fmt.Errorf("helm install: %w", err)
	}
	err = testutil.Poll(4*time.Minute, func() error {
		if err := devenv.WebhooksReady(ctx, suite.cluster.Config); err != nil {
			return err
		}
		d, err := suite.cs.AppsV1().Deployments(releaseNS).Get(ctx, "mooring-controller-manager", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if d.Status.AvailableReplicas != 2 {
			return fmt.Errorf("operator Deployment has %d of 2 replicas available", d.Status.AvailableReplicas)
		}
		return nil
	})
	if err != nil {
		out, _ := kubectl(ctx, "-n", releaseNS, "get", "pods", "-o", "wide")
		return fmt.Errorf("the chart's operator did not become ready: %w\n%s", err, out)
	}
	return nil
}

// TestChartRunsForReal checks the installed chart on the real node: the operator's pods
// run as non-root under the restricted standard, one of the two leads, the API server
// reaches the webhooks through their Service, and the metrics are served over HTTPS to
// a caller with a token bound to mooring-metrics-reader and refused to one without.
func TestChartRunsForReal(t *testing.T) {
	ctx := context.Background()
	pods, err := suite.cs.CoreV1().Pods(releaseNS).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=mooring"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodRunning || !slices.Contains(suite.cluster.RealNodes(), p.Spec.NodeName) {
			t.Errorf("operator pod %s is %s on node %q, want Running on a real node (%v)", p.Name, p.Status.Phase, p.Spec.NodeName, suite.cluster.RealNodes())
		}
		if sc := p.Spec.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
			t.Errorf("operator pod %s does not set runAsNonRoot", p.Name)
		}
		names = append(names, p.Name)
	}
	if len(names) != 2 {
		t.Fatalf("want 2 operator pods, got %v", names)
	}
	testutil.Eventually(t, time.Minute, "one operator pod to hold the leader lease", func() error {
		lease, err := suite.cs.CoordinationV1().Leases(releaseNS).Get(ctx, "mooring.dev", metav1.GetOptions{})
		if err != nil {
			return err
		}
		holder := ""
		if lease.Spec.HolderIdentity != nil {
			holder = *lease.Spec.HolderIdentity
		}
		if !slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(holder, n) }) {
			return fmt.Errorf("lease held by %q, want one of %v", holder, names)
		}
		return nil
	})

	// An App the webhook refuses proves the API server reached it through the Service.
	out, err := kubectlStdin(ctx, `apiVersion: mooring.dev/v1
kind: App
metadata: {name: refused, namespace: default}
spec: {image: "NGINX:1"}
`, "apply", "-f", "-")
	// The reference is parsed by the webhook (go-containerregistry's words), not the schema.
	if err == nil || !strings.Contains(out, "invalid reference format") {
		t.Errorf("an App with an invalid image reference was not refused by the webhook: err=%v\n%s", err, out)
	}

	token := metricsReaderToken(t)
	pod := pods.Items[0]
	url := "https://" + pod.Status.PodIP + ":8443/metrics"
	// The operator's certificate is its own; what is checked here is who may read.
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // see above
	get := func(bearer string) (int, string) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		defer func() { _ = resp.Body.Close() }()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
		return resp.StatusCode, string(body)
	}
	if code, body := get(token); code != http.StatusOK || !strings.Contains(body, "mooring_build_info") {
		t.Errorf("metrics with a mooring-metrics-reader token: %d, want 200 with mooring_build_info; body starts %.200q", code, body)
	}
	if code, _ := get(""); code != http.StatusUnauthorized && code != http.StatusForbidden {
		t.Errorf("metrics without a token: %d, want 401 or 403", code)
	}
}

// metricsReaderToken returns a token of a ServiceAccount bound to mooring-metrics-reader,
// as a scraper would have.
func metricsReaderToken(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "scraper", Namespace: "default"}}
	if _, err := suite.cs.CoreV1().ServiceAccounts("default").Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "scraper-metrics"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "mooring-metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "scraper", Namespace: "default"}},
	}
	if _, err := suite.cs.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := suite.cs.CoreV1().ServiceAccounts("default").CreateToken(ctx, "scraper", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// kubectlStdin is kubectl with a manifest on standard input.
func kubectlStdin(ctx context.Context, stdin string, args ...string) (string, error) {
	cmd := kubectlCmd(ctx, args...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}
