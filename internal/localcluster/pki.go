package localcluster

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// serviceIP is the first address of serviceCIDR: the apiserver gives it to the
// "kubernetes" Service, so the serving certificate must name it.
const (
	serviceCIDR = "10.96.0.0/16"
	serviceIP   = "10.96.0.1"
)

// pki is the cluster's own certificate authority in <StateDir>/pki. The apiserver's
// serving certificate is signed by it, so clients verify the server instead of skipping
// TLS verification, and client certificates signed by it authenticate the admin and
// the components.
type pki struct {
	dir    string
	cert   *x509.Certificate
	key    crypto.Signer
	caPEM  []byte
	caPath string
}

// certSpec describes one leaf certificate.
type certSpec struct {
	name   string // file base name in the pki dir
	cn     string
	orgs   []string
	server bool // serving certificate for 127.0.0.1 and the in-cluster names
	// ips and dnsNames replace the API server's names in a serving certificate of
	// another server (the real node's kubelet).
	ips      []string
	dnsNames []string
}

// keyPair is a leaf certificate and its key, as PEM and as file paths.
type keyPair struct {
	certPEM, keyPEM   []byte
	certPath, keyPath string
}

// loadOrCreatePKI reuses the CA in dir when present and creates one otherwise.
func loadOrCreatePKI(dir string) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create pki dir: %w", err)
	}
	p := &pki{dir: dir, caPath: filepath.Join(dir, "ca.crt")}
	keyPath := filepath.Join(dir, "ca.key")
	if cert, key, certPEM, err := readPair(p.caPath, keyPath); err == nil {
		p.cert, p.key, p.caPEM = cert, key, certPEM
		return p, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("load CA from %s (delete the state dir to start over): %w", dir, err)
	}

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate CA key: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "mooring-local-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("create CA certificate: %w", err)
	}
	if err := writePair(p.caPath, keyPath, der, key); err != nil {
		return nil, err
	}
	p.cert, _ = x509.ParseCertificate(der)
	p.key = key
	p.caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	return p, nil
}

// leaf returns the certificate described by s, reusing the files when they still match
// s, are signed by this CA and stay valid for at least a day.
func (p *pki) leaf(s certSpec) (keyPair, error) {
	kp := keyPair{
		certPath: filepath.Join(p.dir, s.name+".crt"),
		keyPath:  filepath.Join(p.dir, s.name+".key"),
	}
	tmpl := p.template(s)
	if cert, _, _, err := readPair(kp.certPath, kp.keyPath); err == nil && p.reusable(cert, tmpl) {
		return kp, kp.load()
	}

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return kp, fmt.Errorf("generate %s key: %w", s.name, err)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.cert, key.Public(), p.key)
	if err != nil {
		return kp, fmt.Errorf("create %s certificate: %w", s.name, err)
	}
	if err := writePair(kp.certPath, kp.keyPath, der, key); err != nil {
		return kp, err
	}
	return kp, kp.load()
}

func (p *pki) template(s certSpec) *x509.Certificate {
	now := time.Now()
	t := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: s.cn, Organization: s.orgs},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.AddDate(1, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if s.server {
		t.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		// nodeIP is where the API server listens when the cluster has a real node.
		t.IPAddresses = []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP(serviceIP), net.ParseIP(nodeIP)}
		t.DNSNames = []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local"}
		if len(s.ips) > 0 || len(s.dnsNames) > 0 {
			t.IPAddresses, t.DNSNames = nil, s.dnsNames
			for _, ip := range s.ips {
				t.IPAddresses = append(t.IPAddresses, net.ParseIP(ip))
			}
		}
	}
	return t
}

func (p *pki) reusable(cert *x509.Certificate, want *x509.Certificate) bool {
	ips := func(c *x509.Certificate) []string {
		var out []string
		for _, ip := range c.IPAddresses {
			out = append(out, ip.String())
		}
		return out
	}
	return cert.CheckSignatureFrom(p.cert) == nil &&
		time.Until(cert.NotAfter) > 24*time.Hour &&
		cert.Subject.CommonName == want.Subject.CommonName &&
		slices.Equal(cert.Subject.Organization, want.Subject.Organization) &&
		slices.Equal(cert.DNSNames, want.DNSNames) &&
		slices.Equal(ips(cert), ips(want)) &&
		slices.Equal(cert.ExtKeyUsage, want.ExtKeyUsage)
}

func (kp *keyPair) load() error {
	var err error
	if kp.certPEM, err = os.ReadFile(kp.certPath); err != nil {
		return fmt.Errorf("read certificate: %w", err)
	}
	if kp.keyPEM, err = os.ReadFile(kp.keyPath); err != nil {
		return fmt.Errorf("read key: %w", err)
	}
	return nil
}

// loadOrCreateSAKey returns the path of the RSA key that signs service-account tokens.
// Reusing it keeps tokens issued before a restart valid.
func loadOrCreateSAKey(dir string) (string, error) {
	path := filepath.Join(dir, "sa.key")
	if data, err := os.ReadFile(path); err == nil {
		if b, _ := pem.Decode(data); b != nil {
			return path, nil
		}
		return "", fmt.Errorf("%s is not PEM (delete the state dir to start over)", path)
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return "", fmt.Errorf("generate service-account key: %w", err)
	}
	data := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return "", fmt.Errorf("write service-account key: %w", err)
	}
	return path, nil
}

func readPair(certPath, keyPath string) (*x509.Certificate, crypto.Signer, []byte, error) {
	certPEM, err := os.ReadFile(certPath)
	if err != nil {
		return nil, nil, nil, err
	}
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, nil, nil, err
	}
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, nil, nil, fmt.Errorf("%s or %s is not PEM", certPath, keyPath)
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("parse %s: %w", certPath, err)
	}
	key, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("parse %s: %w", keyPath, err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, nil, nil, fmt.Errorf("%s holds no signing key", keyPath)
	}
	return cert, signer, certPEM, nil
}

func writePair(certPath, keyPath string, der []byte, key crypto.Signer) error {
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return fmt.Errorf("encode key: %w", err)
	}
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return fmt.Errorf("write key: %w", err)
	}
	if err := os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return fmt.Errorf("write certificate: %w", err)
	}
	return nil
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	return n
}
