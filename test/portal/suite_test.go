package portal

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mooringhq/mooring/internal/localcluster"
	"github.com/mooringhq/mooring/internal/portal/openapi/validate"
	"github.com/mooringhq/mooring/internal/portal/portaltest"
	"github.com/mooringhq/mooring/internal/portal/server"
	"github.com/mooringhq/mooring/internal/testutil/clusterenv"
	"github.com/mooringhq/mooring/internal/testutil/portalenv"
)

// suite is the cluster and operator every test of the package shares.
var suite *clusterenv.Env

func TestMain(m *testing.M) {
	clusterenv.Main(m, &suite, clusterenv.Options{Name: "portal", Shared: true})
}

// Flags every portal replica of the package runs with: short token lives and lockouts
// so that expiry and unlocking are observable within the time budget, and strict
// single-use refresh tokens, so that the tests of reuse across replicas see a replay as
// one (the reuse interval's grace is tested in internal/portal/server).
var replicaArgs = []string{
	"--access-token-ttl=4s", "--refresh-token-ttl=1h",
	"--lockout-threshold=3", "--lockout-duration=3s", "--lockout-max-duration=6s",
	"--ip-rate-limit=10000", "--user-rate-limit=10000",
	"--refresh-token-reuse-interval=0",
}

// env is what the portal tests share, started by the first test that needs it.
type env struct {
	*portalenv.Env
	admin     client.Client
	validator *validate.Validator
	replicas  []*localcluster.Portal
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
	// A namespace and a first admin of the package's own: test/ui may run a portal on the
	// same cluster (clusterenv's Shared).
	pe, err := portalenv.Install(ctx, suite, portalenv.Options{
		Namespace: "mooring-portal-e2e", AdminUsername: "portal-admin", AdminPassword: "e2e-admin-password"})
	if err != nil {
		return nil, err
	}
	e := &env{Env: pe}
	if e.admin, err = client.New(suite.Config, client.Options{Scheme: server.Scheme}); err != nil {
		return nil, err
	}
	if e.validator, err = validate.New(); err != nil {
		return nil, err
	}
	// Two replicas, as config/portal deploys: they share users, keys and lockouts
	// through the cluster only. Each is stopped when the package ends, and any started
	// one at once if the next fails to start.
	for i := range 2 {
		p, err := e.Start(ctx, fmt.Sprintf("portal-%d.log", i), replicaArgs...)
		if err != nil {
			for _, r := range e.replicas {
				_ = r.Stop()
			}
			return nil, err
		}
		suite.Cleanup(func() error {
			if err := p.Stop(); err != nil {
				return fmt.Errorf("stop portal replica %d: %w", i, err)
			}
			return nil
		})
		e.replicas = append(e.replicas, p)
	}
	return e, nil
}

// client returns a client of replica i.
func (e *env) client(t *testing.T, i int) *portaltest.Client {
	return portaltest.New(t, e.replicas[i].URL, e.validator)
}

func (e *env) adminToken(t *testing.T) string {
	return e.client(t, 0).Login(e.AdminUsername, e.AdminPassword).AccessToken
}
