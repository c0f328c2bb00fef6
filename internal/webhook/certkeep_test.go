package webhook

import (
	"bytes"
	"context"
	"crypto/x509"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
)

// testCerts issues a CA and serving certificate for localhost as the operator does,
// valid from an hour ago for a year (the rotator's defaults).
func testCerts(t *testing.T) map[string][]byte {
	t.Helper()
	cr := &rotator.CertRotator{CAName: "mooring-ca", CAOrganization: "mooring.dev", DNSName: "localhost",
		CertName: "tls.crt", KeyName: "tls.key", CaCertDuration: 365 * 24 * time.Hour, ServerCertDuration: 365 * 24 * time.Hour,
		ExtKeyUsages: &[]x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	data, err := issue(cr)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// The keeper puts back what a valid Secret held when the Secret is deleted, emptied or
// corrupted; only when it holds nothing valid does it issue new certificates.
func TestSecretKeeper(t *testing.T) {
	key := types.NamespacedName{Namespace: "mooring-system", Name: "mooring-webhook-server-cert"}
	good := testCerts(t)
	fresh := testCerts(t)
	helm := map[string]string{"meta.helm.sh/release-name": "mooring"}
	secret := func(data map[string][]byte) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace,
			Labels: map[string]string{"app.kubernetes.io/managed-by": "Helm"}, Annotations: helm}, Data: data}
	}
	corrupted := map[string][]byte{"ca.crt": good["ca.crt"], "ca.key": good["ca.key"], "tls.crt": []byte("garbage"), "tls.key": good["tls.key"]}
	for name, tc := range map[string]struct {
		seen    *corev1.Secret // what a first pass sees and may hold
		now     *corev1.Secret // what the second pass finds; nil: deleted
		later   time.Duration  // how long after the first pass the second one runs
		want    map[string][]byte
		helmish bool // labels and annotations kept
	}{
		"deleted":                {seen: secret(good), want: good, helmish: true},
		"emptied":                {seen: secret(good), now: secret(nil), want: good, helmish: true},
		"corrupted":              {seen: secret(good), now: secret(corrupted), want: good, helmish: true},
		"replaced by valid ones": {seen: secret(good), now: secret(fresh), want: fresh, helmish: true},
		"deleted, never seen":    {want: nil},
		"deleted, held expired":  {seen: secret(good), later: 2 * 365 * 24 * time.Hour, want: nil, helmish: true},
	} {
		t.Run(name, func(t *testing.T) {
			cs := fake.NewClientset()
			issued := 0
			k := &secretKeeper{secrets: cs.CoreV1().Secrets(key.Namespace), key: key, caName: "mooring-ca", dnsName: "localhost",
				issue: func() (map[string][]byte, error) { issued++; return testCerts(t), nil },
				log:   logr.Discard(), now: time.Now}
			ctx := context.Background()
			if tc.seen != nil {
				if _, err := k.secrets.Create(ctx, tc.seen, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
				if err := k.sync(ctx); err != nil {
					t.Fatal(err)
				}
				if err := k.secrets.Delete(ctx, key.Name, metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			if tc.now != nil {
				if _, err := k.secrets.Create(ctx, tc.now, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			k.now = func() time.Time { return time.Now().Add(tc.later) }
			if err := k.sync(ctx); err != nil {
				t.Fatal(err)
			}
			k.now = time.Now
			got, err := k.secrets.Get(ctx, key.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("after the pass: %v", err)
			}
			if tc.want == nil {
				if issued != 1 || !k.valid(got.Data) {
					t.Errorf("issued %d times, Secret valid %v; want new valid certificates", issued, k.valid(got.Data))
				}
			} else {
				for _, name := range []string{"ca.crt", "ca.key", "tls.crt", "tls.key"} {
					if !bytes.Equal(got.Data[name], tc.want[name]) {
						t.Errorf("%s is not the one it should be", name)
					}
				}
				if issued != 0 {
					t.Errorf("issued new certificates %d times, want none", issued)
				}
			}
			if tc.helmish && (got.Labels["app.kubernetes.io/managed-by"] != "Helm" || got.Annotations["meta.helm.sh/release-name"] != "mooring") {
				t.Errorf("labels %v, annotations %v: the Secret's own were not kept", got.Labels, got.Annotations)
			}
			// A further pass over a valid Secret writes nothing.
			before := len(cs.Actions())
			if err := k.sync(ctx); err != nil {
				t.Fatal(err)
			}
			for _, a := range cs.Actions()[before:] {
				if a.GetVerb() != "get" {
					t.Errorf("a pass over a valid Secret did %s", a.GetVerb())
				}
			}
		})
	}
}
