// Package hydra runs ORY Hydra (bin/k8s/hydra, built by `make tools`) as a real OpenID
// Connect provider for tests: in memory, on free loopback ports, with a small login and
// consent page of its own where a person (or a test) types a username. The page
// accepts the login through Hydra's admin API with a subject for that username, and the
// consent with ID token claims (preferred_username, email, groups) the test chose.
package hydra

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/mooringhq/mooring/internal/testutil"
)

// User is who a username typed on the login page is: the ID token's sub, email and
// groups. A username the test did not set is "sub-<username>", "<username>@example.com"
// and no groups.
type User struct {
	Subject, Email string
	Groups         []string
}

// Hydra is one running provider.
type Hydra struct {
	// Issuer is the public URL (the ID tokens' iss); Admin the admin API's URL.
	Issuer, Admin string
	// LoginPage serves the login and consent steps.
	LoginPage *httptest.Server

	mu    sync.Mutex
	users map[string]User
	http  *http.Client
}

// Start runs a Hydra for t, a test of tier, stopped when t ends. It skips t when
// bin/k8s/hydra is missing (naming `make tools`), and fails it instead when tier was
// selected by name.
func Start(t testing.TB, tier testutil.Tier) *Hydra {
	t.Helper()
	testutil.RequireBinaries(t, tier, "hydra")
	h := &Hydra{users: map[string]User{}, http: &http.Client{Timeout: 30 * time.Second}}
	h.LoginPage = httptest.NewServer(h.routes())
	t.Cleanup(h.LoginPage.Close)
	public, admin := freePort(t), freePort(t)
	h.Issuer, h.Admin = "http://127.0.0.1:"+strconv.Itoa(public), "http://127.0.0.1:"+strconv.Itoa(admin)

	logPath := filepath.Join(t.TempDir(), "hydra.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(testutil.RepoRoot(), "bin", "k8s", "hydra"), "serve", "all", "--dev")
	cmd.Env = append(os.Environ(),
		"DSN=memory",
		"SECRETS_SYSTEM="+randomHex(32),
		"URLS_SELF_ISSUER="+h.Issuer,
		"URLS_LOGIN="+h.LoginPage.URL+"/login",
		"URLS_CONSENT="+h.LoginPage.URL+"/consent",
		"SERVE_PUBLIC_HOST=127.0.0.1", "SERVE_PUBLIC_PORT="+strconv.Itoa(public),
		"SERVE_ADMIN_HOST=127.0.0.1", "SERVE_ADMIN_PORT="+strconv.Itoa(admin),
		"LOG_LEAK_SENSITIVE_VALUES=false", "LOG_LEVEL=warn",
	)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatalf("start hydra: %v", err)
	}
	// exited closes when Hydra has exited, with its status in waitErr.
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); _ = logFile.Close(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			if b, err := os.ReadFile(logPath); err == nil {
				t.Logf("hydra's log (%v):\n%s", waitErr, lastBytes(b, 8000))
			}
		}
	})
	deadline := time.Now().Add(time.Minute)
	var last string
	for {
		select {
		case <-exited:
			b, _ := os.ReadFile(logPath)
			t.Fatalf("hydra exited before it was ready (%v):\n%s", waitErr, lastBytes(b, 8000))
		default:
		}
		last = h.ready()
		if last == "" {
			return h
		}
		if time.Now().After(deadline) {
			t.Fatalf("hydra not ready after a minute: %s", last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// ready says why Hydra is not ready yet ("" when it is): both listeners answer.
func (h *Hydra) ready() string {
	for _, u := range []string{h.Issuer + "/.well-known/openid-configuration", h.Admin + "/health/ready"} {
		resp, err := h.http.Get(u)
		if err != nil {
			return err.Error()
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Sprintf("GET %s: %s", u, resp.Status)
		}
	}
	return ""
}

// SetUser says who username is from now on.
func (h *Hydra) SetUser(username string, u User) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.users[username] = u
}

func (h *Hydra) user(username string) User {
	h.mu.Lock()
	defer h.mu.Unlock()
	if u, ok := h.users[username]; ok {
		return u
	}
	return User{Subject: "sub-" + username, Email: username + "@example.com"}
}

// Client registers an OAuth 2.0 client for the authorization code flow that may return
// to redirectURL, and returns its id and secret.
func (h *Hydra) Client(t testing.TB, redirectURL string) (id, secret string) {
	t.Helper()
	secret = randomHex(24)
	var out struct {
		ID string `json:"client_id"`
	}
	err := h.admin(http.MethodPost, "/admin/clients", map[string]any{
		"client_secret": secret, "grant_types": []string{"authorization_code", "refresh_token"},
		"response_types": []string{"code"}, "scope": "openid profile email groups offline_access",
		"redirect_uris": []string{redirectURL}, "token_endpoint_auth_method": "client_secret_basic",
	}, &out)
	if err != nil {
		t.Fatalf("register a hydra client: %v", err)
	}
	return out.ID, secret
}

// admin calls Hydra's admin API with a JSON body and decodes its JSON answer.
func (h *Hydra) admin(method, path string, body, out any) error {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		r = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, h.Admin+path, r)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := h.http.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, b)
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func lastBytes(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
