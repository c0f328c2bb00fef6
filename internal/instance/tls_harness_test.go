package instance

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mooringhq/mooring/internal/dbtls"
)

// testTLS is a cluster's certificates as the tests mount them: a CA, a server
// certificate for 127.0.0.1 and localhost in a Secret directory, and the CA's file for
// clients.
type testTLS struct {
	ca dbtls.Pair
	// dir is the server certificate Secret's directory (tls.crt, tls.key, ca.crt).
	dir string
	// caFile is ca.crt for clients, readable by anyone.
	caFile string
}

func newTestTLS(t *testing.T, u osUser) testTLS {
	t.Helper()
	ca, err := dbtls.NewCA("test-ca", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := dbtls.IssueServer(ca, []string{"127.0.0.1", "localhost"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	dir := secretDir(t, u, map[string]string{"tls.crt": string(srv.Cert), "tls.key": string(srv.Key), "ca.crt": string(ca.Cert)})
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(caFile, ca.Cert, 0o644); err != nil {
		t.Fatal(err)
	}
	return testTLS{ca: ca, dir: dir, caFile: caFile}
}

// client writes a client certificate named cn and its key where a client reads them.
func (x testTLS) client(t *testing.T, cn string) (certFile, keyFile string) {
	t.Helper()
	p, err := dbtls.IssueClient(x.ca, cn, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, cn+".crt"), filepath.Join(dir, cn+".key")
	if err := os.WriteFile(certFile, p.Cert, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, p.Key, 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

// rewriteSecret replaces one key of a mounted Secret directory, as the kubelet's update
// of the volume does.
func rewriteSecret(t *testing.T, u osUser, dir, key, value string) {
	t.Helper()
	path := filepath.Join(dir, key)
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte(value), 0o400); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(tmp, u.uid, u.gid); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}
