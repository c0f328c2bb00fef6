package instance

import (
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
)

// TestStatusOnlyForTheOperator: /status refuses a caller without the cluster's token
// (the probes' endpoints stay open), and many requests within a second observe the
// server once.
func TestStatusOnlyForTheOperator(t *testing.T) {
	admin := t.TempDir()
	if err := os.WriteFile(filepath.Join(admin, "password"), []byte("s3cret:pw"), 0o600); err != nil {
		t.Fatal(err)
	}
	e := &fakeEngine{initialised: true}
	m := &manager{cfg: Config{Engine: "postgresql", Pod: "db-0", AdminSecretDir: admin}, engine: e, log: log.New(io.Discard, "", 0)}
	m.st.update(func(s *Status) { s.Running, s.Phase = true, "Running" })
	m.configured.Store(true)
	srv := httptest.NewServer(m.handler())
	defer srv.Close()

	get := func(path, token string) (int, []byte) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close() //nolint:errcheck // read only
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	for name, token := range map[string]string{
		"no token":                "",
		"another cluster's token": StatusToken("other"),
		"the password itself":     "s3cret:pw",
	} {
		if code, body := get("/status", token); code != http.StatusUnauthorized {
			t.Errorf("/status with %s: %d %s, want 401", name, code, body)
		}
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		if code, body := get(path, ""); code != http.StatusOK {
			t.Errorf("%s without a token: %d %s, want 200 (the kubelet's probes carry none)", path, code, body)
		}
	}
	token := StatusToken("s3cret:pw")
	for range 10 {
		code, body := get("/status", token)
		var s Status
		if code != http.StatusOK || json.Unmarshal(body, &s) != nil || s.Observation == nil || !s.Ready {
			t.Fatalf("/status with the token: %d %s, want 200 with a ready observation", code, body)
		}
	}
	if n := e.observes.Load(); n != 1 {
		t.Errorf("10 requests within a second observed the server %d times, want 1", n)
	}
}
