package instance

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
)

// Keys of the mounted TLS Secrets.
const (
	tlsCertKey = "tls.crt"
	tlsKeyKey  = "tls.key"
	tlsCAKey   = "ca.crt"
)

// tlsFiles are the copies of the certificates the server and its tools read: in RunDir,
// 0600 and owned by the server's user, as PostgreSQL wants its key (the kubelet's
// mounted files are root's and group-readable), and swapped by the manager only when the
// Secret changed, so a reload always finds a matching certificate and key.
type tlsFiles struct {
	// cert and key are the server's; ca verifies the servers (a replica's primary);
	// clientCA verifies the client certificates the superuser may log in with.
	cert, key, ca, clientCA string
}

func (c Config) tlsFiles() tlsFiles {
	dir := filepath.Join(c.RunDir, "tls")
	return tlsFiles{
		cert: filepath.Join(dir, "server.crt"), key: filepath.Join(dir, "server.key"),
		ca: filepath.Join(dir, "ca.crt"), clientCA: filepath.Join(dir, "client-ca.crt"),
	}
}

// installTLS copies the mounted certificates into RunDir and reports whether any
// changed. Without TLS it does nothing.
func installTLS(c Config) (changed bool, err error) {
	if !c.TLS() {
		return false, nil
	}
	f := c.tlsFiles()
	clientCADir := c.ClientCADir
	if clientCADir == "" {
		clientCADir = c.TLSDir
	}
	if err := os.MkdirAll(filepath.Dir(f.cert), 0o700); err != nil {
		return false, err
	}
	for _, cp := range []struct{ from, to string }{
		{filepath.Join(c.TLSDir, tlsCertKey), f.cert},
		{filepath.Join(c.TLSDir, tlsKeyKey), f.key},
		{filepath.Join(c.TLSDir, tlsCAKey), f.ca},
		{filepath.Join(clientCADir, tlsCAKey), f.clientCA},
	} {
		b, err := os.ReadFile(cp.from)
		if err != nil {
			return changed, fmt.Errorf("read the mounted TLS Secret: %w", err)
		}
		if len(b) == 0 {
			return changed, fmt.Errorf("%s of the mounted TLS Secret is empty", filepath.Base(cp.from))
		}
		if old, err := os.ReadFile(cp.to); err == nil && bytes.Equal(old, b) {
			continue
		}
		if err := writePrivate(cp.to, string(b)); err != nil {
			return changed, err
		}
		changed = true
	}
	return changed, nil
}
