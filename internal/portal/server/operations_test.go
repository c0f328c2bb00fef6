package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mooringhq/mooring/internal/devenv"
	"github.com/mooringhq/mooring/internal/portal/auth"
	"github.com/mooringhq/mooring/internal/portal/portaltest"
	"github.com/mooringhq/mooring/internal/testutil"
)

// TestKeyRotationLogsNobodyOut rotates the shared signing keys (as a replica does when
// the newest key is older than --signing-key-rotation): tokens signed before still
// verify, new tokens are signed with the new key, and every replica sees both.
func TestKeyRotationLogsNobodyOut(t *testing.T) {
	secret := "rotation-keys-" + strings.ToLower(strings.ReplaceAll(time.Now().Format("150405.000"), ".", ""))
	a := newPortal(t, func(c *Config) { c.SigningKeySecret = secret })
	u, pw := a.Register("rot")
	before := a.Login(u.Username, pw)

	c, err := client.New(portalConfig, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// A keyring whose clock is past the rotation age adds a key to the same Secret.
	later := func() time.Time { return time.Now().Add(48 * time.Hour) }
	k := auth.NewKeyring(c, auth.KeyringOptions{Namespace: devenv.PortalNamespace, Name: secret, RotateAfter: 24 * time.Hour, Retain: 72 * time.Hour, Now: later})
	if err := k.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(k.KeyIDs()); n != 2 {
		t.Fatalf("after rotation the Secret should hold 2 keys, holds %d", n)
	}
	b := newPortal(t, func(c *Config) { c.SigningKeySecret = secret }) // a replica started after the rotation
	after := b.Login(u.Username, pw)
	portaltest.Expect(t, a.Do("GET", "/api/v1/users/me", before.AccessToken, nil), http.StatusOK, "old token on the first replica")
	portaltest.Expect(t, b.Do("GET", "/api/v1/users/me", before.AccessToken, nil), http.StatusOK, "old token on the second replica")
	portaltest.Expect(t, b.Do("GET", "/api/v1/users/me", after.AccessToken, nil), http.StatusOK, "new token on the second replica")
	// The first replica reads the Secret again when it meets the new key id (at most
	// once per auth.UnknownKeyResync), so the new token works there too without a restart.
	testutil.Eventually(t, 10*time.Second, "the new key to verify on the first replica", func() error {
		if r := a.Do("GET", "/api/v1/users/me", after.AccessToken, nil); r.Status != http.StatusOK {
			return errorf("%d %s", r.Status, r.Body)
		}
		return nil
	})
	s := &corev1.Secret{}
	if err := admin.Get(context.Background(), client.ObjectKey{Namespace: devenv.PortalNamespace, Name: secret}, s); err != nil {
		t.Fatal(err)
	}
	if len(s.Data) != 2 {
		t.Fatalf("the shared Secret should hold 2 keys, holds %d", len(s.Data))
	}
}

func TestProbesMetricsAndRequestIDs(t *testing.T) {
	p := newPortal(t, nil)
	var msg struct{ Message string }
	p.Do("GET", "/ping", "", nil).Decode(t, &msg)
	if msg.Message != "pong" {
		t.Fatalf("ping: %q", msg.Message)
	}
	portaltest.Expect(t, p.Do("GET", "/healthz", "", nil), http.StatusOK, "healthz")
	portaltest.Expect(t, p.Do("GET", "/readyz", "", nil), http.StatusOK, "readyz with the cluster reachable")

	var doc map[string]any
	r := p.Do("GET", "/api/v1/openapi.json", "", nil)
	if r.Decode(t, &doc); doc["openapi"] != "3.0.3" {
		t.Fatalf("openapi.json: %v", doc["openapi"])
	}

	req, _ := http.NewRequest("GET", p.URL+"/ping", nil)
	req.Header.Set("X-Request-ID", "trace-me-42")
	resp, err := p.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if got := resp.Header.Get("X-Request-ID"); got != "trace-me-42" {
		t.Fatalf("X-Request-ID: want the client's echoed, got %q", got)
	}
	testutil.Eventually(t, 10*time.Second, "a JSON log line with the request id", func() error {
		for _, line := range strings.Split(logs.String(), "\n") {
			var rec map[string]any
			if json.Unmarshal([]byte(line), &rec) == nil && rec["request_id"] == "trace-me-42" && rec["route"] == "/ping" {
				return nil
			}
		}
		return errorf("no log line with request_id trace-me-42")
	})
	// An unknown path is not in the document, so not through the validating client.
	nf, err := http.Get(p.URL + "/no/such/path")
	if err != nil {
		t.Fatal(err)
	}
	_ = nf.Body.Close()
	if nf.StatusCode != http.StatusNotFound || nf.Header.Get("Content-Type") != "application/json; charset=utf-8" {
		t.Fatalf("an unknown path: want a JSON 404, got %d %s", nf.StatusCode, nf.Header.Get("Content-Type"))
	}

	// The metrics are served apart from the public listener (Server.Serve's metricsAddr).
	ms := httptest.NewServer(p.srv.MetricsHandler)
	defer ms.Close()
	resp, err = http.Get(ms.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	buf := new(strings.Builder)
	if _, err := io.Copy(buf, resp.Body); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`mooring_portal_http_requests_total{code="200",method="GET",route="/ping"}`,
		`mooring_portal_http_requests_total{code="404",method="GET",route="unmatched"}`,
		`mooring_portal_http_request_duration_seconds_bucket{code="200",method="GET",route="/readyz"`,
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
