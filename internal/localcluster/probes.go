package localcluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// tlsClient verifies servers against the cluster CA and presents the admin
// certificate, which every component's health endpoint accepts.
func tlsClient(caPEM []byte, admin keyPair) (*http.Client, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("cluster CA is not a PEM certificate")
	}
	cert, err := tls.X509KeyPair(admin.certPEM, admin.keyPEM)
	if err != nil {
		return nil, fmt.Errorf("load admin certificate: %w", err)
	}
	return &http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
	}}, nil
}

// httpOK holds once url answers 200. What it saw otherwise is the status and the
// failing checks of a /readyz or /healthz body, or the connection error.
func httpOK(client *http.Client, url string) check {
	return func(ctx context.Context) (bool, string) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false, err.Error()
		}
		resp, err := client.Do(req)
		if err != nil {
			return false, err.Error()
		}
		defer func() { _ = resp.Body.Close() }()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<10))
		if resp.StatusCode == http.StatusOK {
			return true, ""
		}
		return false, fmt.Sprintf("%s: %s", resp.Status, failedChecks(string(body)))
	}
}

// failedChecks keeps the "[-]name failed" lines of a health body, or its start.
func failedChecks(body string) string {
	var failed []string
	for line := range strings.Lines(body) {
		if strings.HasPrefix(line, "[-]") {
			failed = append(failed, strings.TrimSpace(line))
		}
	}
	if len(failed) > 0 {
		return strings.Join(failed, ", ")
	}
	body = strings.TrimSpace(body)
	if len(body) > 200 {
		body = body[:200] + "..."
	}
	return body
}
