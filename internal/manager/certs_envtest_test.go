package manager_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
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
	for _, tc := range []struct {
		name  string
		empty bool
	}{{"missing", false}, {"empty", true}} {
		t.Run(tc.name, func(t *testing.T) {
			if os.Getenv(certCaseEnv) != tc.name {
				runCase(t, tc.name)
				return
			}
			selfManagedCertificates(t, tc.empty)
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

func selfManagedCertificates(t *testing.T, shippedEmpty bool) {
	errs := &errorLog{}
	logf.SetLogger(errs.logger())
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
	if shippedEmpty {
		if err := c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: secret.Namespace, Name: secret.Name}}); err != nil {
			t.Fatal(err)
		}
	}

	var ca []byte
	first := startWebhooks(t, cfg, secret, func() {
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

// startWebhooks runs a manager with the webhooks and self-managed certificates until
// its readiness check passes, and returns the function that stops it. beforeStart runs
// after the webhooks are set up and before the manager starts.
func startWebhooks(t *testing.T, cfg *rest.Config, secret types.NamespacedName, beforeStart func()) (stop func()) {
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
	}
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
