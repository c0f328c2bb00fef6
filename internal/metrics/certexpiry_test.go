package metrics

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// writeCert writes a self-signed certificate expiring at notAfter and returns its path.
func writeCert(t *testing.T, notAfter time.Time) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: notAfter.Add(-time.Hour), NotAfter: notAfter}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "tls.crt")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestCertExpiryFollowsTheFile(t *testing.T) {
	expiry := time.Date(2027, 3, 1, 0, 0, 0, 0, time.UTC)
	path := writeCert(t, expiry)
	c := certExpiry{path: path}
	want := `# HELP mooring_webhook_certificate_expiration_timestamp_seconds When the webhook serving certificate this replica serves expires, in seconds since the epoch.
# TYPE mooring_webhook_certificate_expiration_timestamp_seconds gauge
mooring_webhook_certificate_expiration_timestamp_seconds 1.8038592e+09
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
	// A rotation rewrites the file; the next scrape reports the new certificate.
	rotated := writeCert(t, expiry.Add(24*time.Hour))
	data, err := os.ReadFile(rotated)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(c); got != float64(expiry.Add(24*time.Hour).Unix()) {
		t.Fatalf("after rotation the metric is %v, want %v", got, expiry.Add(24*time.Hour).Unix())
	}
	if n := testutil.CollectAndCount(certExpiry{path: filepath.Join(t.TempDir(), "missing.crt")}); n != 0 {
		t.Fatalf("a missing certificate gave %d series, want none", n)
	}
}

func TestBuildInfo(t *testing.T) {
	if got := testutil.ToFloat64(NewBuildInfo("v1.2.3", "abc")); got != 1 {
		t.Fatalf("mooring_build_info = %v, want 1", got)
	}
}
