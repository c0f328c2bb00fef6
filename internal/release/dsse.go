package release

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
)

// Envelope is a DSSE envelope (github.com/secure-systems-lab/dsse): a payload and
// signatures over its pre-authentication encoding.
type Envelope struct {
	PayloadType string      `json:"payloadType"`
	Payload     string      `json:"payload"`
	Signatures  []Signature `json:"signatures"`
}

// Signature is one signature of an envelope.
type Signature struct {
	KeyID string `json:"keyid,omitempty"`
	Sig   string `json:"sig"`
}

// PAE is DSSE's pre-authentication encoding, what is signed:
// "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body.
func PAE(payloadType string, payload []byte) []byte {
	b := fmt.Appendf(nil, "DSSEv1 %d %s %d ", len(payloadType), payloadType, len(payload))
	return append(b, payload...)
}

// Sign signs payload as a DSSE envelope with key (ed25519, or ECDSA P-256 over SHA-256
// with an ASN.1 signature, as cosign and the DSSE reference implementation do).
func Sign(key crypto.Signer, payloadType string, payload []byte) (Envelope, error) {
	msg := PAE(payloadType, payload)
	var (
		sig []byte
		err error
	)
	switch k := key.(type) {
	case ed25519.PrivateKey:
		sig = ed25519.Sign(k, msg)
	case *ecdsa.PrivateKey:
		if k.Curve != elliptic.P256() {
			return Envelope{}, errors.New("an ECDSA release key must be on P-256")
		}
		digest := sha256.Sum256(msg)
		sig, err = ecdsa.SignASN1(rand.Reader, k, digest[:])
	default:
		return Envelope{}, fmt.Errorf("release key of type %T: want ed25519 or ECDSA P-256", key)
	}
	if err != nil {
		return Envelope{}, err
	}
	id, err := KeyID(key.Public())
	if err != nil {
		return Envelope{}, err
	}
	return Envelope{
		PayloadType: payloadType,
		Payload:     base64.StdEncoding.EncodeToString(payload),
		Signatures:  []Signature{{KeyID: id, Sig: base64.StdEncoding.EncodeToString(sig)}},
	}, nil
}

// Open returns the envelope's payload when one of its signatures verifies with pub and
// its payload type is payloadType.
func (e Envelope) Open(pub crypto.PublicKey, payloadType string) ([]byte, error) {
	if e.PayloadType != payloadType {
		return nil, fmt.Errorf("envelope payload type %q, want %q", e.PayloadType, payloadType)
	}
	payload, err := base64.StdEncoding.DecodeString(e.Payload)
	if err != nil {
		return nil, fmt.Errorf("envelope payload: %w", err)
	}
	msg := PAE(e.PayloadType, payload)
	for _, s := range e.Signatures {
		sig, err := base64.StdEncoding.DecodeString(s.Sig)
		if err != nil {
			continue
		}
		if verifySig(pub, msg, sig) {
			return payload, nil
		}
	}
	return nil, fmt.Errorf("no signature of the envelope (%d) verifies with the release's public key", len(e.Signatures))
}

func verifySig(pub crypto.PublicKey, msg, sig []byte) bool {
	switch k := pub.(type) {
	case ed25519.PublicKey:
		return ed25519.Verify(k, msg, sig)
	case *ecdsa.PublicKey:
		digest := sha256.Sum256(msg)
		return k.Curve == elliptic.P256() && ecdsa.VerifyASN1(k, digest[:], sig)
	}
	return false
}

// KeyID is the hex SHA-256 of the public key's PKIX (DER) encoding.
func KeyID(pub crypto.PublicKey) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(der)
	return hex.EncodeToString(sum[:]), nil
}

// LoadSigner reads a release key: a PEM "PRIVATE KEY" (PKCS #8: ed25519 or ECDSA P-256,
// e.g. `openssl genpkey -algorithm ed25519`) or "EC PRIVATE KEY" (SEC 1, P-256).
func LoadSigner(path string) (crypto.Signer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("release key: %w", err)
	}
	b, _ := pem.Decode(data)
	if b == nil {
		return nil, fmt.Errorf("release key %s: no PEM block", path)
	}
	var key any
	switch b.Type {
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(b.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(b.Bytes)
	default:
		return nil, fmt.Errorf("release key %s: PEM block %q, want PRIVATE KEY or EC PRIVATE KEY", path, b.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("release key %s: %w", path, err)
	}
	switch k := key.(type) {
	case ed25519.PrivateKey:
		return k, nil
	case *ecdsa.PrivateKey:
		if k.Curve != elliptic.P256() {
			return nil, fmt.Errorf("release key %s: ECDSA on %s, want P-256", path, k.Curve.Params().Name)
		}
		return k, nil
	}
	return nil, fmt.Errorf("release key %s: %T, want ed25519 or ECDSA P-256", path, key)
}

// GenerateKey writes a new ed25519 release key to path (PKCS #8 PEM, mode 0600), failing
// when path exists.
func GenerateKey(path string) (crypto.Signer, error) {
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	if err := pem.Encode(f, &pem.Block{Type: "PRIVATE KEY", Bytes: der}); err != nil {
		_ = f.Close() // the write error is the one to report
		return nil, err
	}
	return key, f.Close()
}

// PublicKeyPEM is pub as a PEM "PUBLIC KEY" (PKIX), the form cosign and openssl read.
func PublicKeyPEM(pub crypto.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}

// ParsePublicKeyPEM reads a PEM "PUBLIC KEY" written by PublicKeyPEM.
func ParsePublicKeyPEM(data []byte) (crypto.PublicKey, error) {
	b, _ := pem.Decode(data)
	if b == nil || b.Type != "PUBLIC KEY" {
		return nil, errors.New("public key: want a PEM PUBLIC KEY block")
	}
	pub, err := x509.ParsePKIXPublicKey(b.Bytes)
	if err != nil {
		return nil, fmt.Errorf("public key: %w", err)
	}
	switch k := pub.(type) {
	case ed25519.PublicKey:
		return k, nil
	case *ecdsa.PublicKey:
		if k.Curve == elliptic.P256() {
			return k, nil
		}
	}
	return nil, fmt.Errorf("public key of type %T: want ed25519 or ECDSA P-256", pub)
}
