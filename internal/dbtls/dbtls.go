// Package dbtls makes the certificates of a DatabaseCluster's servers: a CA per cluster
// and a server certificate signed by it that names every Service and pod DNS name the
// clients dial. Everything is PEM in memory, for Secrets: no files, no client.
package dbtls

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"slices"
	"strings"
	"time"
)

// Lifetimes. The server certificate is renewed when a third of its life is left, so a
// failing renewal has weeks to be noticed before clients refuse the server.
const (
	CAValidity     = 10 * 365 * 24 * time.Hour
	ServerValidity = 90 * 24 * time.Hour
	RenewBefore    = 30 * 24 * time.Hour
)

// Keys of the Secrets, as kubernetes.io/tls Secrets and cert-manager name them.
const (
	CertKey = "tls.crt"
	KeyKey  = "tls.key"
	CAKey   = "ca.crt"
)

// Pair is a certificate and its private key, both PEM.
type Pair struct {
	Cert, Key []byte
}

// NewCA makes a self-signed CA named cn.
func NewCA(cn string, now time.Time) (Pair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Pair{}, fmt.Errorf("generate CA key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: cn, Organization: []string{"mooring.dev"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(CAValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return Pair{}, fmt.Errorf("create CA certificate: %w", err)
	}
	return encode(der, key)
}

// IssueServer signs a server certificate for names (DNS names, or IP addresses in their
// text form) with ca. It may also authenticate as a client (replicas present it to the
// primary where the engine asks for one).
func IssueServer(ca Pair, names []string, now time.Time) (Pair, error) {
	caCert, caKey, err := parsePair(ca)
	if err != nil {
		return Pair{}, fmt.Errorf("CA: %w", err)
	}
	if len(names) == 0 {
		return Pair{}, errors.New("a server certificate needs at least one name")
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Pair{}, fmt.Errorf("generate server key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: names[0], Organization: []string{"mooring.dev"}},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(ServerValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	if caCert.NotAfter.Before(tmpl.NotAfter) {
		tmpl.NotAfter = caCert.NotAfter
	}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, key.Public(), caKey)
	if err != nil {
		return Pair{}, fmt.Errorf("create server certificate: %w", err)
	}
	return encode(der, key)
}

// NeedsRenewal reports why a server certificate must be issued again, "" when it need
// not: unreadable, not signed by caPEM, not naming every one of names, or within
// RenewBefore of its end.
func NeedsRenewal(certPEM, caPEM []byte, names []string, now time.Time) string {
	cert, err := ParseCert(certPEM)
	if err != nil {
		return "the certificate cannot be read"
	}
	ca, err := ParseCert(caPEM)
	if err != nil {
		return "the CA cannot be read"
	}
	if err := cert.CheckSignatureFrom(ca); err != nil {
		return "the certificate is not signed by the cluster's CA"
	}
	if have := Names(cert); !slices.Equal(have, sorted(names)) {
		return "the certificate names " + strings.Join(have, ", ") + ", not " + strings.Join(sorted(names), ", ")
	}
	if left := cert.NotAfter.Sub(now); left < RenewBefore {
		return fmt.Sprintf("the certificate expires at %s", cert.NotAfter.UTC().Format(time.RFC3339))
	}
	return ""
}

// Names are a certificate's DNS names and IP addresses, sorted.
func Names(c *x509.Certificate) []string {
	out := slices.Clone(c.DNSNames)
	for _, ip := range c.IPAddresses {
		out = append(out, ip.String())
	}
	slices.Sort(out)
	return out
}

// NamesHash is a short digest of names in any order, for an annotation that tells
// whether a certificate names what a cluster needs without reading the Secret's data.
func NamesHash(names []string) string {
	sum := sha256.Sum256([]byte(strings.Join(sorted(names), "\n")))
	return hex.EncodeToString(sum[:8])
}

// ParseCert reads the first certificate of a PEM bundle.
func ParseCert(certPEM []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("no PEM certificate")
	}
	return x509.ParseCertificate(block.Bytes)
}

func parsePair(p Pair) (*x509.Certificate, crypto.Signer, error) {
	cert, err := ParseCert(p.Cert)
	if err != nil {
		return nil, nil, err
	}
	block, _ := pem.Decode(p.Key)
	if block == nil {
		return nil, nil, errors.New("no PEM private key")
	}
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("private key: %w", err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, nil, errors.New("the private key cannot sign")
	}
	return cert, signer, nil
}

func encode(der []byte, key *ecdsa.PrivateKey) (Pair, error) {
	k, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return Pair{}, err
	}
	return Pair{
		Cert: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		Key:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: k}),
	}, nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return n
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return slices.Compact(out)
}

// IssueClient signs a client certificate whose subject is O=mooring.dev, CN=cn: the
// user name PostgreSQL's cert authentication takes from it, and the subject MariaDB's
// and MySQL's REQUIRE SUBJECT compare.
func IssueClient(ca Pair, cn string, now time.Time) (Pair, error) {
	caCert, caKey, err := parsePair(ca)
	if err != nil {
		return Pair{}, fmt.Errorf("CA: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Pair{}, fmt.Errorf("generate client key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: cn, Organization: []string{"mooring.dev"}},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(ServerValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if caCert.NotAfter.Before(tmpl.NotAfter) {
		tmpl.NotAfter = caCert.NotAfter
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, key.Public(), caKey)
	if err != nil {
		return Pair{}, fmt.Errorf("create client certificate: %w", err)
	}
	return encode(der, key)
}
