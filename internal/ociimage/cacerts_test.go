package ociimage

import (
	"archive/tar"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// TestImageCarriesCACertificates: /etc/ssl/certs/ca-certificates.crt, where Go's
// crypto/x509 looks first on Linux, holds Mozilla's roots from the pinned module, every
// block a certificate, readable by the non-root user, and a label says where they come from.
func TestImageCarriesCACertificates(t *testing.T) {
	img, err := Build(spec("binary"))
	if err != nil {
		t.Fatal(err)
	}
	rc := mutate.Extract(img)
	defer func() { _ = rc.Close() }()
	tr := tar.NewReader(rc)
	var (
		body []byte
		hdr  *tar.Header
	)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Name == CACertificatesPath {
			hdr = h
			if body, err = io.ReadAll(tr); err != nil {
				t.Fatal(err)
			}
		}
	}
	if hdr == nil {
		t.Fatalf("no %s in the image", CACertificatesPath)
	}
	if hdr.Mode != 0o644 || hdr.Uid != 0 {
		t.Errorf("%s mode %o owner %d, want 0644 root", CACertificatesPath, hdr.Mode, hdr.Uid)
	}
	var subjects []string
	for rest := body; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			if strings.TrimSpace(string(rest)) != "" {
				t.Fatalf("bundle has trailing non-PEM data: %.80q", rest)
			}
			break
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			t.Fatalf("block %d: %v", len(subjects), err)
		}
		if !c.IsCA {
			t.Errorf("%s is not a CA", c.Subject)
		}
		subjects = append(subjects, c.Subject.CommonName)
	}
	if len(subjects) < 100 {
		t.Errorf("bundle has %d roots, want Mozilla's (more than 100)", len(subjects))
	}
	for _, want := range []string{"ISRG Root X1", "DigiCert Global Root G2", "GTS Root R1", "Amazon Root CA 1"} {
		found := false
		for _, s := range subjects {
			found = found || s == want
		}
		if !found {
			t.Errorf("bundle lacks %q", want)
		}
	}
	if !x509.NewCertPool().AppendCertsFromPEM(body) {
		t.Error("crypto/x509 reads no certificate from the bundle")
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if src := cf.Config.Labels[CACertificatesLabel]; !strings.HasPrefix(src, "golang.org/x/crypto/x509roots/fallback") {
		t.Errorf("label %s = %q, want the module it comes from", CACertificatesLabel, src)
	}
}
