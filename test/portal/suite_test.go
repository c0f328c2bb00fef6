package portal

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mooringhq/mooring/internal/devenv"
	"github.com/mooringhq/mooring/internal/localcluster"
	"github.com/mooringhq/mooring/internal/portal/openapi/validate"
	"github.com/mooringhq/mooring/internal/portal/portaltest"
	"github.com/mooringhq/mooring/internal/portal/server"
	"github.com/mooringhq/mooring/internal/testutil/clusterenv"
)

// suite is the cluster and operator every test of the package shares.
var suite *clusterenv.Env

func TestMain(m *testing.M) {
	clusterenv.Main(m, &suite, clusterenv.Options{Name: "portal"})
}

// Flags every portal replica of the package runs with: short token lives and lockouts
// so that expiry and unlocking are observable within the time budget.
var replicaArgs = []string{
	"--access-token-ttl=4s", "--refresh-token-ttl=1h",
	"--lockout-threshold=3", "--lockout-duration=3s", "--lockout-max-duration=6s",
	"--ip-rate-limit=10000", "--user-rate-limit=10000",
}

// env is what the portal tests share, started by the first test that needs it.
type env struct {
	bin, kubeconfig string
	portalConfig    *rest.Config
	admin           client.Client
	validator       *validate.Validator
	replicas        []*localcluster.Portal
	adminPassword   string
}

var (
	setupOnce sync.Once
	shared    *env
	setupErr  error
)

func setup(t *testing.T) *env {
	t.Helper()
	setupOnce.Do(func() { shared, setupErr = start() })
	if setupErr != nil {
		t.Fatalf("portal set-up: %v", setupErr)
	}
	return shared
}

func start() (*env, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	e := &env{bin: filepath.Join(suite.StateDir, "mooring-portal"), adminPassword: "e2e-admin-password"}
	build := exec.Command("go", "build", "-o", e.bin, "./cmd/mooring-portal")
	build.Dir, build.Stdout, build.Stderr = suite.Root, os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return nil, fmt.Errorf("build portal: %w", err)
	}
	var err error
	if e.kubeconfig, e.portalConfig, err = devenv.InstallPortal(ctx, suite.Config, suite.Root, filepath.Join(suite.BinDir, "kubectl"), suite.StateDir); err != nil {
		return nil, err
	}
	if e.admin, err = client.New(suite.Config, client.Options{Scheme: server.Scheme}); err != nil {
		return nil, err
	}
	if e.validator, err = validate.New(); err != nil {
		return nil, err
	}
	pwFile := filepath.Join(suite.StateDir, "portal-admin-password")
	if err := os.WriteFile(pwFile, []byte(e.adminPassword+"\n"), 0o600); err != nil {
		return nil, err
	}
	// Two replicas, as config/portal deploys: they share users, keys and lockouts
	// through the cluster only.
	for i := range 2 {
		p, err := e.startReplica(ctx, fmt.Sprintf("portal-%d.log", i), append(replicaArgs, "--admin-password-file", pwFile)...)
		if err != nil {
			return nil, err
		}
		e.replicas = append(e.replicas, p)
	}
	return e, nil
}

// startReplica runs one more portal process; the caller or the package's end stops it
// (the processes die with the test binary).
func (e *env) startReplica(ctx context.Context, logName string, args ...string) (*localcluster.Portal, error) {
	return localcluster.StartPortal(ctx, localcluster.PortalOptions{
		Binary: e.bin, Kubeconfig: e.kubeconfig, LogPath: filepath.Join(suite.StateDir, logName),
		Args: append([]string{"--namespace", devenv.PortalNamespace}, args...),
	})
}

// client returns a client of replica i.
func (e *env) client(t *testing.T, i int) *portaltest.Client {
	return portaltest.New(t, e.replicas[i].URL, e.validator)
}

func (e *env) adminToken(t *testing.T) string {
	return e.client(t, 0).Login("admin", e.adminPassword).AccessToken
}
