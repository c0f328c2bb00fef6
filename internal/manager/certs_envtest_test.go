package manager_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/mooringhq/mooring/internal/localcluster"
	"github.com/mooringhq/mooring/internal/manager"
	"github.com/mooringhq/mooring/internal/testutil"
	"github.com/mooringhq/mooring/internal/webhook"
)

// errorLog records the error-level entries of every logger, as a user reading the
// operator's log would see them.
type errorLog struct {
	mu      sync.Mutex
	entries []string
}

func (l *errorLog) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		if strings.Contains(args, `"error"`) || strings.Contains(args, "err=") {
			l.mu.Lock()
			l.entries = append(l.entries, prefix+" "+args)
			l.mu.Unlock()
		}
	}, funcr.Options{})
}

func (l *errorLog) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.entries...)
}

// certCaseEnv names the case a child test process runs (see TestSelfManagedCertificates).
const certCaseEnv = "MOORING_CERT_TEST_CASE"

// TestSelfManagedCertificates starts the webhooks as `--webhook-cert-management=self` does
// on a fresh install, with the certificate Secret missing (`make run`) and shipped empty
// (config/webhook and the chart, so that uninstalling removes it): Mooring issues its CA
// and serving certificate into the Secret, injects the CA into both webhook
// configurations and the DatabaseCluster CRD's conversion, becomes ready, and logs no
// error on the way. (Restarts over a filled Secret are covered by test/faults, with the
// real binary.)
//
// Each case runs in a test process of its own, with its own API server: the rotator
// registers a controller name, which controller-runtime allows once per process.
func TestSelfManagedCertificates(t *testing.T) {
	testutil.RequireTier(t, testutil.Integration)
	for _, tc := range []struct {
		name string
		run  func(t *testing.T)
	}{
		{"missing", func(t *testing.T) { selfManagedCertificates(t, false) }},
		{"empty", func(t *testing.T) { selfManagedCertificates(t, true) }},
		{"heals", secretHeals},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if os.Getenv(certCaseEnv) != tc.name {
				runCase(t, tc.name)
				return
			}
			tc.run(t)
		})
	}
}

// runCase runs one case of TestSelfManagedCertificates in a child process and fails with
// its output unless the case ran and passed.
func runCase(t *testing.T, name string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.v", "-test.count=1", "-test.run=^TestSelfManagedCertificates$/^"+name+"$")
	cmd.Env = append(os.Environ(), certCaseEnv+"="+name)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestSelfManagedCertificates/"+name) {
		t.Fatalf("case %s in a child process: %v\n%s", name, err, out)
	}
}

// certEnv starts an API server with Mooring's CRDs, the targets of the CA (installTargets)
// and the certificate Secret's namespace; it returns its config, an admin client and the
// Secret's key.
func certEnv(t *testing.T) (*rest.Config, client.Client, types.NamespacedName) {
	t.Helper()
	env := &envtest.Environment{
		BinaryAssetsDirectory: testutil.AssetsDir(),
		CRDDirectoryPaths:     []string{filepath.Join(testutil.RepoRoot(), "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		CRDInstallOptions:     envtest.CRDInstallOptions{Scheme: manager.Scheme},
	}
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(apiextensionsv1.AddToScheme(scheme))
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	installTargets(t, c)
	secret := types.NamespacedName{Namespace: "mooring-system", Name: "mooring-webhook-server-cert"}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: secret.Namespace}}); err != nil {
		t.Fatal(err)
	}
	return cfg, c, secret
}

func selfManagedCertificates(t *testing.T, shippedEmpty bool) {
	errs := &errorLog{}
	logf.SetLogger(errs.logger())
	cfg, c, secret := certEnv(t)
	ctx := context.Background()
	if shippedEmpty {
		if err := c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: secret.Namespace, Name: secret.Name}}); err != nil {
			t.Fatal(err)
		}
	}

	var ca []byte
	first, _ := startWebhooks(t, cfg, secret, func() {
		// Before the manager (and with it the rotator) starts, the Secret holds
		// certificates and every target carries its CA: the rotator then has nothing to
		// write, and no stale-cache update of its own to conflict with.
		var s corev1.Secret
		if err := c.Get(ctx, secret, &s); err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{"ca.crt", "ca.key", "tls.crt", "tls.key"} {
			if len(s.Data[key]) == 0 {
				t.Errorf("the certificate Secret has no %s before the manager starts", key)
			}
		}
		ca = s.Data["ca.crt"]
		if err := injected(ctx, c, ca); err != nil {
			t.Errorf("before the manager starts: %v", err)
		}
	})
	testutil.Eventually(t, testutil.DefaultTimeout, "the CA still injected into both webhook configurations and the CRD", func() error {
		return injected(ctx, c, ca)
	})
	first()
	if e := errs.get(); len(e) > 0 {
		t.Errorf("a fresh start logged %d errors, want none:\n%s", len(e), strings.Join(e, "\n"))
	}
}

// secretHeals: while the operator runs, its certificate Secret comes back within
// seconds. Deleted, it is created again with the certificates it held, so the CA injected
// into both webhook configurations and the CRD still verifies the certificate the webhook
// server serves; emptied or corrupted, it is filled again, and the injected CA verifies
// the served certificate again.
func secretHeals(t *testing.T) {
	errs := &errorLog{}
	logf.SetLogger(errs.logger())
	cfg, c, key := certEnv(t)
	ctx := context.Background()
	stop, port := startWebhooks(t, cfg, key, func() {})
	defer stop()
	var secret corev1.Secret
	if err := c.Get(ctx, key, &secret); err != nil {
		t.Fatal(err)
	}
	held := secret.Data
	// healed reports nil once the Secret holds valid certificates (the ones it held when
	// same), its CA is in every target, and that CA verifies the served certificate.
	healed := func(same bool, oldUID types.UID) func() error {
		return func() error {
			var s corev1.Secret
			if err := c.Get(ctx, key, &s); err != nil {
				return err
			}
			if s.UID == oldUID {
				return fmt.Errorf("the Secret is still the deleted one")
			}
			for _, k := range []string{"ca.crt", "ca.key", "tls.crt", "tls.key"} {
				if same && !bytes.Equal(s.Data[k], held[k]) {
					return fmt.Errorf("%s is not the one the Secret held", k)
				}
			}
			if ok, err := rotator.ValidCert(s.Data["ca.crt"], s.Data["tls.crt"], s.Data["tls.key"], "localhost", nil, time.Now()); !ok {
				return fmt.Errorf("the Secret holds no valid certificate: %w", err)
			}
			if err := injected(ctx, c, s.Data["ca.crt"]); err != nil {
				return err
			}
			return servedCertVerifies(ctx, c, port)
		}
	}
	if err := servedCertVerifies(ctx, c, port); err != nil {
		t.Fatalf("before the Secret is touched: %v", err)
	}

	if err := c.Delete(ctx, &secret); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	// The rotator does not act on a missing Secret: what comes back is the keeper's.
	testutil.Eventually(t, 10*time.Second, "the deleted Secret back with the certificates it held", healed(true, secret.UID))
	t.Logf("deleted Secret back in %s", time.Since(t0).Round(10*time.Millisecond))

	for _, tc := range []struct {
		name  string
		spoil func(s *corev1.Secret)
	}{
		{"emptied", func(s *corev1.Secret) { s.Data = nil }},
		{"corrupted", func(s *corev1.Secret) {
			s.Data["tls.crt"] = []byte("-----BEGIN CERTIFICATE-----\nnot one\n-----END CERTIFICATE-----\n")
			delete(s.Data, "ca.key")
		}},
	} {
		if err := c.Get(ctx, key, &secret); err != nil {
			t.Fatal(err)
		}
		tc.spoil(&secret)
		if err := c.Update(ctx, &secret); err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		// The rotator sees it too and may issue a new CA, which it then injects; the
		// keeper, which only writes back what it held, is usually first.
		testutil.Eventually(t, 10*time.Second, "the "+tc.name+" Secret filled again", healed(false, ""))
		same := healed(true, "")() == nil
		t.Logf("%s Secret filled again in %s, with the certificates it held: %v", tc.name, time.Since(t0).Round(10*time.Millisecond), same)
	}
	for _, e := range errs.get() {
		t.Logf("logged: %s", e)
	}
}

// servedCertVerifies connects to the webhook server as the API server does: trusting only
// the mutating webhook configuration's CA bundle, for localhost.
func servedCertVerifies(ctx context.Context, c client.Client, port int) error {
	var m admissionregistrationv1.MutatingWebhookConfiguration
	if err := c.Get(ctx, types.NamespacedName{Name: webhook.MutatingConfigName}, &m); err != nil {
		return err
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(m.Webhooks[0].ClientConfig.CABundle) {
		return errors.New("the CA bundle holds no certificate")
	}
	d := tls.Dialer{Config: &tls.Config{RootCAs: roots, ServerName: "localhost", MinVersion: tls.VersionTLS12}}
	conn, err := d.DialContext(ctx, "tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return fmt.Errorf("the served certificate against the injected CA bundle: %w", err)
	}
	return conn.Close()
}

// startWebhooks runs a manager with the webhooks and self-managed certificates until
// its readiness check passes, and returns the function that stops it. beforeStart runs
// after the webhooks are set up and before the manager starts.
func startWebhooks(t *testing.T, cfg *rest.Config, secret types.NamespacedName, beforeStart func()) (stop func(), port int) {
	t.Helper()
	port, err := localcluster.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	mgr, err := manager.New(cfg, ctrl.Options{
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		WebhookServer:          crwebhook.NewServer(crwebhook.Options{Host: "127.0.0.1", Port: port, CertDir: dir}),
	})
	if err != nil {
		t.Fatal(err)
	}
	ready, err := manager.SetupWebhooks(mgr, manager.WebhookOptions{CertManagement: manager.CertsSelf,
		Cert: webhook.CertOptions{Secret: secret, CertDir: dir, DNSName: "localhost", WriteFiles: true}})
	if err != nil {
		t.Fatal(err)
	}
	beforeStart()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	if err := testutil.Poll(testutil.DefaultTimeout, func() error { return ready(nil) }); err != nil {
		cancel()
		t.Fatalf("the webhooks did not become ready: %v", err)
	}
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	}, port
}

// installTargets creates what the rotator injects its CA into: the two webhook
// configurations (named as config/default names them, with one webhook that matches
// nothing) and the DatabaseCluster CRD's webhook conversion.
func installTargets(t *testing.T, c client.Client) {
	t.Helper()
	ctx := context.Background()
	url := "https://127.0.0.1:1/never-called"
	rules := []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule: admissionregistrationv1.Rule{APIGroups: []string{"unused.mooring.dev"},
			APIVersions: []string{"v1"}, Resources: []string{"nothing"}},
	}}
	none := admissionregistrationv1.SideEffectClassNone
	ignore := admissionregistrationv1.Ignore
	if err := c.Create(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: webhook.MutatingConfigName},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "m.mooring.dev", Rules: rules, SideEffects: &none,
			FailurePolicy: &ignore, AdmissionReviewVersions: []string{"v1"},
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url}}},
	}); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: webhook.ValidatingConfigName},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "v.mooring.dev", Rules: rules, SideEffects: &none,
			FailurePolicy: &ignore, AdmissionReviewVersions: []string{"v1"},
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url}}},
	}); err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := c.Get(ctx, types.NamespacedName{Name: webhook.ConversionCRDName}, &crd); err != nil {
		t.Fatal(err)
	}
	crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{
		Strategy: apiextensionsv1.WebhookConverter,
		Webhook: &apiextensionsv1.WebhookConversion{ConversionReviewVersions: []string{"v1"},
			ClientConfig: &apiextensionsv1.WebhookClientConfig{URL: ptr.To("https://127.0.0.1:1/convert")}},
	}
	if err := c.Update(ctx, &crd); err != nil {
		t.Fatal(err)
	}
}

// injected reports whether every target carries ca as its CA bundle.
func injected(ctx context.Context, c client.Client, ca []byte) error {
	var m admissionregistrationv1.MutatingWebhookConfiguration
	if err := c.Get(ctx, types.NamespacedName{Name: webhook.MutatingConfigName}, &m); err != nil {
		return err
	}
	var v admissionregistrationv1.ValidatingWebhookConfiguration
	if err := c.Get(ctx, types.NamespacedName{Name: webhook.ValidatingConfigName}, &v); err != nil {
		return err
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := c.Get(ctx, types.NamespacedName{Name: webhook.ConversionCRDName}, &crd); err != nil {
		return err
	}
	for name, got := range map[string][]byte{
		"mutating webhook":   m.Webhooks[0].ClientConfig.CABundle,
		"validating webhook": v.Webhooks[0].ClientConfig.CABundle,
		"CRD conversion":     crd.Spec.Conversion.Webhook.ClientConfig.CABundle,
	} {
		if !bytes.Equal(got, ca) {
			return fmt.Errorf("%s has a CA bundle of %d bytes, not the Secret's %d", name, len(got), len(ca))
		}
	}
	return nil
}
