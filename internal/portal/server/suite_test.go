package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mooringhq/mooring/internal/devenv"
	"github.com/mooringhq/mooring/internal/portal/models"
	"github.com/mooringhq/mooring/internal/portal/openapi/validate"
	"github.com/mooringhq/mooring/internal/portal/server"
	"github.com/mooringhq/mooring/internal/portal/services"
	"github.com/mooringhq/mooring/internal/portal/telemetry"
	"github.com/mooringhq/mooring/internal/testutil"
)

var (
	env *testutil.Env
	// portalConfig authenticates as the portal's ServiceAccount under the RBAC of
	// config/portal, as in production.
	portalConfig *rest.Config
	validator    *validate.Validator
	// admin is a cluster-admin client that knows the portal's kinds.
	admin client.Client
	// logs receives every log line of the portals of this package.
	logs syncBuffer
)

const adminPassword = "admin-password-for-tests"

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestMain(m *testing.M) {
	slog.SetDefault(telemetry.NewLogger(&logs, slog.LevelInfo))
	testutil.Main(m, func(e *testutil.Env) {
		env = e
		root := testutil.RepoRoot()
		dir, err := os.MkdirTemp("", "portal-envtest-")
		if err != nil {
			panic(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, portalConfig, err = devenv.InstallPortal(ctx, e.Config, root, filepath.Join(testutil.AssetsDir(), "kubectl"), dir)
		if err != nil {
			panic(err)
		}
		if admin, err = client.New(e.Config, client.Options{Scheme: server.Scheme}); err != nil {
			panic(err)
		}
		if validator, err = validate.New(); err != nil {
			panic(err)
		}
	})
}

// baseConfig is a portal configuration for tests: short lockouts, generous limits.
func baseConfig() server.Config {
	return server.Config{
		Rest:             portalConfig,
		Namespace:        devenv.PortalNamespace,
		UsersNamespace:   "mooring-portal-users",
		SigningKeySecret: "mooring-portal-signing-keys",
		KeyRotation:      24 * time.Hour,
		Issuer:           "mooring-portal", Audience: "mooring-portal",
		AccessTTL: time.Minute, RefreshTTL: time.Hour,
		IPLimit: 10000, UserLimit: 10000, RateWindow: time.Minute,
		Lockout:       services.LockoutPolicy{Threshold: 3, Base: 3 * time.Second, Max: 6 * time.Second},
		Roles:         services.DefaultRoleNames,
		AdminUsername: "admin", AdminEmail: "admin@example.com", AdminPassword: adminPassword,
	}
}

// portal is one in-process portal served over real HTTP, whose every exchange is
// checked against the OpenAPI document.
type portal struct {
	t      testing.TB
	url    string
	client *http.Client
	srv    *server.Server
}

func newPortal(t testing.TB, change func(*server.Config)) *portal {
	t.Helper()
	cfg := baseConfig()
	if change != nil {
		change(&cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := server.New(ctx, cfg)
	if err != nil {
		t.Fatalf("start portal: %v", err)
	}
	hs := httptest.NewServer(s.Handler)
	t.Cleanup(hs.Close)
	p := &portal{t: t, url: hs.URL, srv: s}
	p.client = &http.Client{Transport: &validate.Transport{V: validator, OnError: func(err error) {
		t.Errorf("OpenAPI: %v", err)
	}}}
	return p
}

type reply struct {
	status int
	header http.Header
	body   []byte
}

func (r reply) decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
}

func (r reply) errorBody(t testing.TB) models.ErrorBody {
	t.Helper()
	var e models.ErrorResponse
	r.decode(t, &e)
	return e.Error
}

func (p *portal) do(method, path, token string, body any) reply {
	p.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			p.t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, p.url+path, rd)
	if err != nil {
		p.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		p.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		p.t.Fatal(err)
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: data}
}

// expect fails unless r has status want.
func expect(t testing.TB, r reply, want int, what string) {
	t.Helper()
	if r.status != want {
		t.Fatalf("%s: want %d, got %d: %s", what, want, r.status, r.body)
	}
}

var userSeq struct {
	sync.Mutex
	n int
}

// uniqueName returns a fresh username for prefix.
func uniqueName(prefix string) string {
	userSeq.Lock()
	defer userSeq.Unlock()
	userSeq.n++
	return fmt.Sprintf("%s-%d-%d", prefix, time.Now().UnixNano()%1e6, userSeq.n)
}

// register makes an account and returns it with its password.
func (p *portal) register(prefix string) (models.User, string) {
	p.t.Helper()
	name, pw := uniqueName(prefix), "correct horse battery "+prefix
	r := p.do("POST", "/api/v1/users", "", models.RegisterRequest{Username: name, Email: name + "@example.com", Password: pw})
	expect(p.t, r, http.StatusCreated, "register "+name)
	var u models.User
	r.decode(p.t, &u)
	return u, pw
}

// login returns the token pair of username.
func (p *portal) login(username, password string) models.TokenResponse {
	p.t.Helper()
	r := p.do("POST", "/api/v1/login", "", models.LoginRequest{Username: username, Password: password})
	expect(p.t, r, http.StatusOK, "login "+username)
	var tok models.TokenResponse
	r.decode(p.t, &tok)
	return tok
}

// adminToken logs in as the first admin.
func (p *portal) adminToken() string {
	return p.login("admin", adminPassword).AccessToken
}

// grant sets a user's role (and namespaces) as the admin.
func (p *portal) grant(adminTok, id, role string, namespaces ...string) models.User {
	p.t.Helper()
	req := models.UpdateUserRequest{Role: &role}
	if namespaces != nil {
		req.Namespaces = &namespaces
	}
	r := p.do("PATCH", "/api/v1/users/"+id, adminTok, req)
	expect(p.t, r, http.StatusOK, "grant "+role)
	var u models.User
	r.decode(p.t, &u)
	return u
}
