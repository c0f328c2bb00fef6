package dbtls

import (
	"crypto/x509"
	"strings"
	"testing"
	"time"
)

// A server certificate from the cluster's CA verifies for each name it was issued for,
// and for no other; renewal is asked for a changed name list, another CA and near the end.
func TestIssueAndRenewal(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	ca, err := NewCA("db-ca", now)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"db", "db.ns.svc", "db-0.db-headless.ns.svc.cluster.local", "127.0.0.1"}
	srv, err := IssueServer(ca, names, now)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := ParseCert(ca.Cert)
	cert, _ := ParseCert(srv.Cert)
	roots := x509.NewCertPool()
	roots.AddCert(caCert)
	for _, n := range names {
		if _, err := cert.Verify(x509.VerifyOptions{DNSName: n, Roots: roots, CurrentTime: now}); err != nil {
			t.Errorf("verify for %s: %v", n, err)
		}
	}
	if _, err := cert.Verify(x509.VerifyOptions{DNSName: "other.ns.svc", Roots: roots, CurrentTime: now}); err == nil {
		t.Error("the certificate verified for a name it was not issued for")
	}
	if why := NeedsRenewal(srv.Cert, ca.Cert, names, now); why != "" {
		t.Errorf("a fresh certificate needs renewal: %s", why)
	}
	other, _ := NewCA("other", now)
	for name, tc := range map[string]struct {
		ca    []byte
		names []string
		at    time.Time
		want  string
	}{
		"a name added":    {ca.Cert, append(names, "db-r.ns.svc"), now, "names"},
		"another CA":      {other.Cert, names, now, "not signed"},
		"near its end":    {ca.Cert, names, now.Add(ServerValidity - RenewBefore + time.Hour), "expires"},
		"same, reordered": {ca.Cert, []string{names[3], names[2], names[1], names[0]}, now.Add(24 * time.Hour), ""},
	} {
		t.Run(name, func(t *testing.T) {
			got := NeedsRenewal(srv.Cert, tc.ca, tc.names, tc.at)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("NeedsRenewal = %q, want one containing %q", got, tc.want)
			}
		})
	}
	if NamesHash(names) != NamesHash([]string{names[2], names[0], names[3], names[1]}) {
		t.Error("NamesHash depends on the order of the names")
	}
}
