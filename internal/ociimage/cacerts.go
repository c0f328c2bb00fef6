package ociimage

import (
	"bytes"
	"encoding/pem"
	"runtime/debug"
	"sync"

	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// CACertificatesPath is where the image carries its CA bundle: the path Go's crypto/x509
// (and OpenSSL, curl and most other TLS clients) read first on Linux.
const CACertificatesPath = "etc/ssl/certs/ca-certificates.crt"

// caModule is the Go module the bundle comes from: Mozilla's NSS roots as the Go team
// publishes them, pinned in go.mod and go.sum, so the image needs no network and no
// build machine's /etc/ssl.
const caModule = "golang.org/x/crypto/x509roots/fallback"

// CACertificates returns the PEM bundle the image carries at /etc/ssl/certs/ca-certificates.crt
// and where it comes from (the module and its version, for the image's labels). Roots the
// bundle marks with a constraint that PEM cannot carry (NSS's "distrust after" date) are
// left out rather than trusted without it.
var CACertificates = sync.OnceValues(func() ([]byte, string) {
	var buf bytes.Buffer
	for root := range bundle.Roots() {
		if root.Constraint != nil {
			continue
		}
		// A bytes.Buffer never fails a write.
		_ = pem.Encode(&buf, &pem.Block{Type: "CERTIFICATE", Bytes: root.Certificate})
	}
	return buf.Bytes(), caSource()
})

// caSource names the bundle's module and version as this binary was built with it.
func caSource() string {
	source := caModule + " (Mozilla NSS roots)"
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return source
	}
	for _, m := range info.Deps {
		if m.Path == caModule {
			if m.Replace != nil {
				m = m.Replace
			}
			return m.Path + "@" + m.Version + " (Mozilla NSS roots)"
		}
	}
	return source
}
