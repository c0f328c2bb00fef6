package metricsauth_test

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/yaml"

	"github.com/mooringhq/mooring/internal/localcluster"
	"github.com/mooringhq/mooring/internal/metricsauth"
	"github.com/mooringhq/mooring/internal/testutil"
)

var admin *rest.Config

// apiServer is the package's API server, started by the first test that requires it.
var apiServer = testutil.APIServer{Set: func(cfg *rest.Config) error {
	admin = cfg
	return nil
}}

func TestMain(m *testing.M) { apiServer.Main(m) }

// identities are ServiceAccounts of one test and their tokens.
type identities struct {
	cs     *kubernetes.Clientset
	ns     string
	tokens map[string]string
}

// newIdentities creates a namespace and, for each name, a ServiceAccount and a token.
func newIdentities(t *testing.T, names ...string) *identities {
	t.Helper()
	ctx := context.Background()
	cs := kubernetes.NewForConfigOrDie(admin)
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "metricsauth-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	id := &identities{cs: cs, ns: ns.Name, tokens: map[string]string{}}
	for _, name := range names {
		if _, err := cs.CoreV1().ServiceAccounts(ns.Name).Create(ctx, &corev1.ServiceAccount{
			ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create ServiceAccount %s: %v", name, err)
		}
		tr, err := cs.CoreV1().ServiceAccounts(ns.Name).CreateToken(ctx, name,
			&authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("token for %s: %v", name, err)
		}
		id.tokens[name] = tr.Status.Token
	}
	return id
}

// bind grants the ClusterRole of the repository file role to ServiceAccount sa.
func (id *identities) bind(t *testing.T, role, sa string) {
	t.Helper()
	ctx := context.Background()
	b, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), role))
	if err != nil {
		t.Fatal(err)
	}
	var cr rbacv1.ClusterRole
	if err := yaml.UnmarshalStrict(b, &cr); err != nil {
		t.Fatalf("%s: %v", role, err)
	}
	cr.Name = id.ns + "-" + cr.Name
	if _, err := id.cs.RbacV1().ClusterRoles().Create(ctx, &cr, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create ClusterRole from %s: %v", role, err)
	}
	if _, err := id.cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: cr.Name + "-" + sa},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: cr.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: id.ns, Name: sa}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("bind %s to %s: %v", cr.Name, sa, err)
	}
}

// as is a client configuration that authenticates with sa's token only.
func (id *identities) as(sa string) *rest.Config {
	cfg := rest.AnonymousClientConfig(admin)
	cfg.BearerToken = id.tokens[sa]
	return cfg
}

// countingClient counts the requests the filter sends to the API server.
func countingClient(t *testing.T, cfg *rest.Config, n *atomic.Int64) *http.Client {
	t.Helper()
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	next := hc.Transport
	hc.Transport = roundTripper(func(r *http.Request) (*http.Response, error) {
		n.Add(1)
		return next.RoundTrip(r)
	})
	return hc
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestSecureMetricsEndpoint runs controller-runtime's metrics server over HTTPS with the
// filter, as --metrics-secure does, and the operator's own role
// (config/rbac/metrics_auth_role.yaml) for the reviews: only a caller bound to
// config/prometheus/metrics_reader_role.yaml reads /metrics.
func TestSecureMetricsEndpoint(t *testing.T) {
	apiServer.Require(t)
	id := newIdentities(t, "operator", "prometheus", "stranger")
	id.bind(t, "config/rbac/metrics_auth_role.yaml", "operator")
	id.bind(t, "config/prometheus/metrics_reader_role.yaml", "prometheus")

	port, err := localcluster.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	var reviews atomic.Int64
	opCfg := id.as("operator")
	srv, err := metricsserver.NewServer(metricsserver.Options{
		BindAddress: "127.0.0.1:" + strconv.Itoa(port), SecureServing: true, FilterProvider: metricsauth.Filter,
	}, opCfg, countingClient(t, opCfg, &reviews))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("metrics server: %v", err)
		}
	})

	// The server makes itself a certificate; what is under test is who gets through.
	scraper := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // self-signed test server
	get := func(path, auth string) (int, string, error) {
		req, _ := http.NewRequest(http.MethodGet, "https://127.0.0.1:"+strconv.Itoa(port)+path, nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := scraper.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer func() { _ = resp.Body.Close() }()
		body, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), err
	}
	if err := testutil.Poll(testutil.DefaultTimeout, func() error {
		_, _, err := get("/metrics", "")
		return err
	}); err != nil {
		t.Fatalf("metrics server did not listen on %d: %v", port, err)
	}

	for _, tc := range []struct {
		name, path, auth string
		want             int
	}{
		{"no token", "/metrics", "", http.StatusUnauthorized},
		{"not a bearer token", "/metrics", "Basic " + id.tokens["prometheus"], http.StatusUnauthorized},
		{"a token the API server rejects", "/metrics", "Bearer not-a-token", http.StatusUnauthorized},
		{"authenticated without the reader role", "/metrics", "Bearer " + id.tokens["stranger"], http.StatusForbidden},
		{"the reader role", "/metrics", "Bearer " + id.tokens["prometheus"], http.StatusOK},
	} {
		code, body, err := get(tc.path, tc.auth)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if code != tc.want {
			t.Errorf("%s: GET %s answered %d, want %d: %s", tc.name, tc.path, code, tc.want, body)
		}
		if code == http.StatusOK && !strings.Contains(body, "go_goroutines") {
			t.Errorf("%s: the body has no go_goroutines metric:\n%.400s", tc.name, body)
		}
		if tok := id.tokens["prometheus"]; strings.Contains(body, tok) {
			t.Errorf("%s: the answer repeats the token", tc.name)
		}
	}

	// Answers are reused: repeated scrapes by the same caller send no review. The scrapes
	// above with tokens were reviewed through the counting client; had none been counted,
	// the counter would not count the filter's requests and "0 more" would prove nothing.
	before := reviews.Load()
	if before == 0 {
		t.Fatal("the authenticated scrapes above sent 0 review requests through the counting client, want more than 0: it does not see the filter's requests")
	}
	for range 3 {
		if code, body, err := get("/metrics", "Bearer "+id.tokens["prometheus"]); err != nil || code != http.StatusOK {
			t.Fatalf("repeated scrape: %d %v %s", code, err, body)
		}
	}
	if after := reviews.Load(); after != before {
		t.Errorf("3 repeated scrapes sent %d review requests to the API server, want 0 (cached)", after-before)
	}
}

// TestReviewsNeedTheOperatorRole shows what the role is for: without it the API server
// refuses the operator's TokenReview, and the scrape fails closed (500, not the metrics).
func TestReviewsNeedTheOperatorRole(t *testing.T) {
	apiServer.Require(t)
	id := newIdentities(t, "operator", "prometheus")
	id.bind(t, "config/prometheus/metrics_reader_role.yaml", "prometheus")
	cfg := id.as("operator")
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	filter, err := metricsauth.Filter(cfg, hc)
	if err != nil {
		t.Fatal(err)
	}
	h, err := filter(logr.Discard(), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "metrics")
	}))
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+id.tokens["prometheus"])
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusInternalServerError || strings.Contains(rec.Body.String(), "metrics\n") {
		t.Errorf("without create on tokenreviews the scrape answered %d %q, want 500 and no metrics", rec.Code, rec.Body.String())
	}
}
