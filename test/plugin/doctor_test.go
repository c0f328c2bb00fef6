package plugin_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"regexp"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mooringhq/mooring/internal/devenv"
	"github.com/mooringhq/mooring/internal/plugin"
	"github.com/mooringhq/mooring/internal/testutil"
)

// doctorLine finds the line of a check in doctor's output, with the fix under it.
func doctorLine(out, verdict, check string) string {
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		f := strings.Fields(l)
		if len(f) > 1 && f[0] == verdict && strings.Contains(l, check) {
			if i+1 < len(lines) && strings.Contains(lines[i+1], "fix:") {
				return l + "\n" + lines[i+1]
			}
			return l
		}
	}
	return ""
}

// doctorUntil runs doctor until its output has a line of the verdict for the check that
// contains every one of want; the cluster may need a moment to show the breakage.
func doctorUntil(t *testing.T, ns, verdict, check string, want ...string) string {
	t.Helper()
	var out string
	testutil.Eventually(t, time.Minute, fmt.Sprintf("doctor: %s %s with %q", verdict, check, want), func() error {
		r := run(context.Background(), nil, "doctor", "-n", ns)
		out = r.out
		if verdict == string(plugin.Fail) && r.err == nil {
			return fmt.Errorf("doctor exited 0:\n%s", r.out)
		}
		line := doctorLine(r.out, verdict, check)
		for _, w := range want {
			if !strings.Contains(line, w) {
				return fmt.Errorf("line %q lacks %q in:\n%s", line, w, r.out)
			}
		}
		return nil
	})
	return out
}

// doctor passes on a healthy installation, then fails each check with its own message when
// its thing is broken: the webhook Service missing (and present without endpoints), the
// operator stopped, the serving certificate expired. Everything is restored at the end and
// doctor passes again. Not parallel: it breaks what other tests need.
func TestDoctor(t *testing.T) {
	ensureOperator(t)
	ctx := context.Background()
	ns := suite.Namespace(t, "doctor")

	healthy := mustRun(t, nil, "doctor", "-n", ns)
	for _, check := range []string{"crd apps.mooring.dev", "crd databaseclusters.mooring.dev", "webhook " + plugin.MutatingConfigName,
		"webhook " + plugin.ValidatingConfigName, "webhook conversion", "serving certificate", "operator leader lease",
		"dry-run mooring.dev/v1 App", "dry-run mooring.dev/v1alpha1 DatabaseCluster", "dry-run invalid Backup", "conversion round trip", "versions"} {
		if doctorLine(healthy, "PASS", check) == "" {
			t.Errorf("healthy install: no PASS for %q in\n%s", check, healthy)
		}
	}
	if strings.Contains(healthy, "FAIL") {
		t.Errorf("healthy install has failures:\n%s", healthy)
	}
	t.Logf("doctor on a healthy install:\n%s", healthy)
	// The operator of the suite runs outside the cluster with leader election: its lease
	// says which build leads (make build's git describe, or dev when the suite built it).
	if v := mustRun(t, nil, "version"); !strings.Contains(v, "plugin:   dev (") ||
		!regexp.MustCompile(`(?m)^operator: \S+ \([^)]+\), leader \S+_\S+ \(namespace mooring-system\)$`).MatchString(v) {
		t.Errorf("version printed:\n%s", v)
	}

	t.Run("webhook Service missing", func(t *testing.T) { webhookServiceMissing(t, ns) })
	t.Run("operator stopped and certificate expired", func(t *testing.T) { operatorStoppedAndCertificateExpired(t, ns) })

	ensureOperator(t)
	testutil.Eventually(t, time.Minute, "doctor to pass again", func() error {
		r := run(ctx, nil, "doctor", "-n", ns)
		if r.err != nil {
			return fmt.Errorf("%w\n%s", r.err, r.out)
		}
		return nil
	})
}

// webhookServiceMissing points the validating webhooks at a Service, as in a cluster
// deployment, that does not exist; then creates it without endpoints.
func webhookServiceMissing(t *testing.T, ns string) {
	ctx := context.Background()
	key := client.ObjectKey{Name: plugin.ValidatingConfigName}
	orig := &admissionv1.ValidatingWebhookConfiguration{}
	if err := suite.Client.Get(ctx, key, orig); err != nil {
		t.Fatal(err)
	}
	restore := func() {
		testutil.Eventually(t, testutil.DefaultTimeout, "validating webhooks restored", func() error {
			cur := &admissionv1.ValidatingWebhookConfiguration{}
			if err := suite.Client.Get(ctx, key, cur); err != nil {
				return err
			}
			cur.Webhooks = orig.Webhooks
			return suite.Client.Update(ctx, cur)
		})
	}
	t.Cleanup(restore)
	svc := &admissionv1.ServiceReference{Namespace: devenv.Namespace, Name: "mooring-webhook-service", Port: ptr.To(int32(443))}
	testutil.Eventually(t, testutil.DefaultTimeout, "validating webhooks pointed at a Service", func() error {
		cur := &admissionv1.ValidatingWebhookConfiguration{}
		if err := suite.Client.Get(ctx, key, cur); err != nil {
			return err
		}
		for i := range cur.Webhooks {
			path := ""
			if u := ptr.Deref(cur.Webhooks[i].ClientConfig.URL, ""); strings.Contains(u, "/") {
				path = u[strings.Index(strings.TrimPrefix(u, "https://"), "/")+len("https://"):]
			}
			ref := *svc
			ref.Path = ptr.To(path)
			cur.Webhooks[i].ClientConfig.URL, cur.Webhooks[i].ClientConfig.Service = nil, &ref
		}
		return suite.Client.Update(ctx, cur)
	})

	out := doctorUntil(t, ns, "FAIL", "webhook "+plugin.ValidatingConfigName,
		"webhook Service mooring-system/mooring-webhook-service is missing", "fix: kubectl apply -k config/default")
	if line := doctorLine(out, "FAIL", "dry-run mooring.dev/v1 App"); !strings.Contains(line, "failed calling webhook") {
		t.Errorf("with the webhook Service missing, the dry-run of the App says %q, want a failed webhook call\n%s", line, out)
	}
	t.Logf("doctor with the webhook Service missing:\n%s", out)

	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: svc.Name, Namespace: svc.Namespace},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 443}}},
	}
	if err := suite.Client.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = suite.Client.Delete(ctx, s) })
	doctorUntil(t, ns, "FAIL", "webhook "+plugin.ValidatingConfigName, "has no ready endpoint")
}

// operatorStoppedAndCertificateExpired stops the operator: the lease goes stale and the
// webhooks stop answering. Then the certificate Secret gets an expired certificate.
func operatorStoppedAndCertificateExpired(t *testing.T, ns string) {
	ctx := context.Background()
	if err := suite.StopOperator(); err != nil {
		t.Fatal(err)
	}
	out := doctorUntil(t, ns, "FAIL", "operator leader lease", "the operator is not running")
	for _, check := range []string{"webhook " + plugin.MutatingConfigName, "webhook conversion"} {
		if line := doctorLine(out, "FAIL", check); !strings.Contains(line, "does not answer") || !strings.Contains(line, "fix: start the operator") {
			t.Errorf("operator stopped: %s says %q, want that it does not answer, and the fix", check, line)
		}
	}
	if doctorLine(out, "PASS", "serving certificate") == "" {
		t.Errorf("operator stopped: the certificate in the Secret is still valid, want PASS:\n%s", out)
	}
	t.Logf("doctor with the operator stopped:\n%s", out)

	key := client.ObjectKey{Namespace: devenv.Namespace, Name: devenv.SecretName}
	secret := &corev1.Secret{}
	if err := suite.Client.Get(ctx, key, secret); err != nil {
		t.Fatal(err)
	}
	orig := secret.DeepCopy()
	t.Cleanup(func() {
		testutil.Eventually(t, testutil.DefaultTimeout, "certificate Secret restored", func() error {
			cur := &corev1.Secret{}
			if err := suite.Client.Get(ctx, key, cur); err != nil {
				return err
			}
			cur.Data = orig.Data
			return suite.Client.Update(ctx, cur)
		})
	})
	crt, keyPEM := expiredCertificate(t)
	secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey] = crt, keyPEM
	if err := suite.Client.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	out = doctorUntil(t, ns, "FAIL", "serving certificate", "expired", "Secret mooring-system/mooring-webhook-server-cert", "fix: the operator renews")
	t.Logf("doctor with an expired certificate:\n%s", out)
}

// expiredCertificate is a self-signed certificate for localhost that expired an hour ago.
func expiredCertificate(t *testing.T) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "localhost"}, DNSNames: []string{"localhost"},
		NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}
