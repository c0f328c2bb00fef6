package controller_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mooringhq/mooring/internal/devenv"
	"github.com/mooringhq/mooring/internal/portal/cluster"
	"github.com/mooringhq/mooring/internal/portal/controller"
	"github.com/mooringhq/mooring/internal/portal/server"
	"github.com/mooringhq/mooring/internal/portal/services"
	"github.com/mooringhq/mooring/internal/testutil"
)

var (
	env *testutil.Env
	// admin is a cluster-admin client that knows the portal's kinds: the "hand" that
	// edits bindings behind the portal's back.
	admin client.Client
)

// listedProtected is a namespace the reconcilers are told to protect
// (--protected-namespaces) that the admission policies of config/portal do not know, so a
// Team naming it gets written and the reconciler's own refusal to bind it is what a test
// sees. (kube-* and the portal's namespaces are refused at admission already.)
const listedProtected = "protected-by-flag"

func TestMain(m *testing.M) {
	testutil.Main(m, func(e *testutil.Env) {
		env = e
		e.OnStart(func(*testutil.Env) error {
			stop, err := setup()
			if err != nil {
				return fmt.Errorf("portal set-up: %w", err)
			}
			e.OnStop(stop) // before the API server goes, or leader election fails loudly
			return nil
		})
	})
}

// setup installs the portal's RBAC and starts its manager as the portal's
// ServiceAccount, with leader election as in production, so the test proves those
// rules suffice. It returns a function that stops the manager.
func setup() (func(), error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", "portal-controller-")
	if err != nil {
		return nil, err
	}
	_, portalConfig, err := devenv.InstallPortal(ctx, env.Config, testutil.RepoRoot(), filepath.Join(testutil.AssetsDir(), "kubectl"), dir)
	if err != nil {
		return nil, err
	}
	if admin, err = client.New(env.Config, client.Options{Scheme: server.Scheme}); err != nil {
		return nil, err
	}
	mgr, err := controller.NewManager(controller.Options{Rest: portalConfig, Namespace: devenv.PortalNamespace,
		Impersonator: cluster.NewImpersonator(portalConfig, cluster.DefaultUsersNamespace), Roles: services.DefaultRoleNames,
		Protected: services.Protected{Listed: []string{listedProtected}}, Scheme: server.Scheme, LeaderElection: true})
	if err != nil {
		return nil, err
	}
	mctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()
	return func() {
		stop()
		if err := <-done; err != nil {
			fmt.Fprintln(os.Stderr, "portal manager:", err)
		}
		_ = os.RemoveAll(dir)
	}, nil
}
