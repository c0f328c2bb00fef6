package release

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"
)

func TestPAE(t *testing.T) {
	// The DSSE specification's example.
	got := string(PAE("http://example.com/HelloWorld", []byte("hello world")))
	want := "DSSEv1 29 http://example.com/HelloWorld 11 hello world"
	if got != want {
		t.Errorf("PAE = %q, want %q", got, want)
	}
}

// TestSignAndOpen: an envelope signed with an ed25519 or a P-256 release key (PKCS #8 or
// SEC 1 PEM) opens with its public key (PEM round trip) and with no other, and not once
// its payload or payload type changes.
func TestSignAndOpen(t *testing.T) {
	dir := t.TempDir()
	edPath := filepath.Join(dir, "ed25519.pem")
	if _, err := GenerateKey(edPath); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(edPath); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("generated key mode: %v %v, want 0600", st.Mode(), err)
	}
	if _, err := GenerateKey(edPath); err == nil {
		t.Error("GenerateKey overwrote an existing key")
	}
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sec1, err := x509.MarshalECPrivateKey(ec)
	if err != nil {
		t.Fatal(err)
	}
	ecPath := filepath.Join(dir, "p256.pem")
	if err := os.WriteFile(ecPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: sec1}), 0o600); err != nil {
		t.Fatal(err)
	}
	p384, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(p384)
	if err != nil {
		t.Fatal(err)
	}
	p384Path := filepath.Join(dir, "p384.pem")
	if err := os.WriteFile(p384Path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8}), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadSigner(p384Path); err == nil {
		t.Error("a P-384 key was accepted")
	}

	payload := []byte(`{"_type":"https://in-toto.io/Statement/v1"}`)
	var pubs []any
	for _, path := range []string{edPath, ecPath} {
		key, err := LoadSigner(path)
		if err != nil {
			t.Fatal(err)
		}
		pemPub, err := PublicKeyPEM(key.Public())
		if err != nil {
			t.Fatal(err)
		}
		pub, err := ParsePublicKeyPEM(pemPub)
		if err != nil {
			t.Fatal(err)
		}
		pubs = append(pubs, pub)
		env, err := Sign(key, InTotoMediaType, payload)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := env.Open(pub, InTotoMediaType); err != nil || string(got) != string(payload) {
			t.Errorf("%s: open = %q, %v", filepath.Base(path), got, err)
		}
		if _, err := env.Open(pub, "application/json"); err == nil {
			t.Errorf("%s: opened as another payload type", filepath.Base(path))
		}
		changed := env
		changed.Payload = base64.StdEncoding.EncodeToString([]byte(`{"_type":"https://in-toto.io/Statement/v0.1"}`))
		if _, err := changed.Open(pub, InTotoMediaType); err == nil {
			t.Errorf("%s: a changed payload opened", filepath.Base(path))
		}
		changed = env
		changed.PayloadType = "application/json"
		if _, err := changed.Open(pub, "application/json"); err == nil {
			t.Errorf("%s: a changed payload type opened", filepath.Base(path))
		}
	}
	// Each key's envelope does not open with the other's public key.
	edKey, err := LoadSigner(edPath)
	if err != nil {
		t.Fatal(err)
	}
	env, err := Sign(edKey, InTotoMediaType, payload)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Open(pubs[1], InTotoMediaType); err == nil {
		t.Error("an ed25519 signature opened with a P-256 key")
	}
}

func TestDirHash(t *testing.T) {
	h, ok := DirHash("h1:VlbKKnNfV8bJzeqoa4cOKqO6bYr3WgKZxO8Z16+hsOM=")
	if !ok || h != "5656ca2a735f57c6c9cdeaa86b870e2aa3ba6d8af75a0299c4ef19d7afa1b0e3" {
		t.Errorf("DirHash = %q, %v", h, ok)
	}
	for _, bad := range []string{"", "h2:abc", "h1:not base64", "h1:AAAA"} {
		if _, ok := DirHash(bad); ok {
			t.Errorf("DirHash(%q) accepted", bad)
		}
	}
}
