package server_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mooringhq/mooring/internal/devenv"
	"github.com/mooringhq/mooring/internal/portal/openapi/validate"
	"github.com/mooringhq/mooring/internal/portal/portaltest"
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
		e.OnStart(installPortal)
	})
}

// installPortal installs the portal's namespace, RBAC and identity on the package's API
// server once it has started, as config/portal does.
func installPortal(e *testutil.Env) error {
	dir, err := os.MkdirTemp("", "portal-envtest-")
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, portalConfig, err = devenv.InstallPortal(ctx, e.Config, testutil.RepoRoot(), filepath.Join(testutil.AssetsDir(), "kubectl"), dir); err != nil {
		return err
	}
	if admin, err = client.New(e.Config, client.Options{Scheme: server.Scheme}); err != nil {
		return err
	}
	validator, err = validate.New()
	return err
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
		// Every spent refresh token ends its session, at once: the tests of single use
		// and of concurrent refreshes count on it.
		RefreshReuseInterval: 0,
		// Served over plain HTTP (httptest): Secure cookies would never come back.
		SecureCookies: false,
	}
}

// portal is one in-process portal served over real HTTP, whose every exchange is
// checked against the OpenAPI document.
type portal struct {
	*portaltest.Client
	srv *server.Server
}

func newPortal(t testing.TB, change func(*server.Config)) *portal {
	t.Helper()
	env.Require(t)
	cfg := baseConfig()
	if change != nil {
		change(&cfg)
	}
	return serve(t, cfg, httptest.NewUnstartedServer(nil))
}

// serve starts a portal of cfg on hs, not started yet (so that a test may know its
// address first, as a single sign-on provider needs to), and stops both at the end.
func serve(t testing.TB, cfg server.Config, hs *httptest.Server) *portal {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := server.New(ctx, cfg)
	if err != nil {
		t.Fatalf("start portal: %v", err)
	}
	t.Cleanup(s.Close)
	hs.Config.Handler = s.Handler
	hs.Start()
	t.Cleanup(hs.Close)
	return &portal{Client: portaltest.New(t, hs.URL, validator), srv: s}
}

// adminToken logs in as the first admin.
func (p *portal) adminToken() string {
	return p.Login("admin", adminPassword).AccessToken
}
