// Package portalenv runs the portal for end-to-end tests: built from the checkout,
// under the RBAC of config/portal, as processes beside a clusterenv cluster, the way
// `make run` and a real install run it.
package portalenv

import (
	"context"
	"os"
	"path/filepath"

	"k8s.io/client-go/rest"

	"github.com/mooringhq/mooring/internal/devenv"
	"github.com/mooringhq/mooring/internal/localcluster"
	"github.com/mooringhq/mooring/internal/testutil"
	"github.com/mooringhq/mooring/internal/testutil/clusterenv"
)

// Env is the portal installed on a cluster, ready to start replicas.
type Env struct {
	// Bin is the portal built from the checkout; Kubeconfig and Config authenticate as
	// the portal's ServiceAccount.
	Bin, Kubeconfig string
	Config          *rest.Config
	// Namespace holds the portal's Secrets and Lease.
	Namespace string
	// AdminUsername is the first admin; AdminPassword its password, in AdminPasswordFile.
	AdminUsername, AdminPassword, AdminPasswordFile string

	cluster *clusterenv.Env
}

// Options name what is a package's own when several share a cluster: each package
// installs its portal in a namespace of its own with a first admin of its own, since
// Users are cluster-wide.
type Options struct {
	// Namespace is the portal's namespace, mooring-portal when empty.
	Namespace string
	// AdminUsername is the first admin, "admin" when empty.
	AdminUsername, AdminPassword string
}

// Install builds cmd/mooring-portal, applies the user ClusterRoles and the portal's
// RBAC, and writes the first admin's password file, all under the package's state
// directory (kept when the package fails).
func Install(ctx context.Context, e *clusterenv.Env, o Options) (*Env, error) {
	p := &Env{Bin: filepath.Join(e.StateDir, "mooring-portal"), Namespace: o.Namespace,
		AdminUsername: o.AdminUsername, AdminPassword: o.AdminPassword, cluster: e,
		AdminPasswordFile: filepath.Join(e.StateDir, "portal-admin-password")}
	if p.Namespace == "" {
		p.Namespace = devenv.PortalNamespace
	}
	if p.AdminUsername == "" {
		p.AdminUsername = "admin"
	}
	var err error
	if p.Bin, err = testutil.Binary(testutil.PortalBinEnv, "./cmd/mooring-portal", p.Bin); err != nil {
		return nil, err
	}
	if p.Kubeconfig, p.Config, err = devenv.InstallPortalIn(ctx, e.Config, e.Root, filepath.Join(e.BinDir, "kubectl"), e.StateDir, p.Namespace); err != nil {
		return nil, err
	}
	if err := os.WriteFile(p.AdminPasswordFile, []byte(p.AdminPassword+"\n"), 0o600); err != nil {
		return nil, err
	}
	return p, nil
}

// Start runs one portal process on a free port of 127.0.0.1, logging to
// <state>/<logName>, with the first admin and args; it returns once /readyz answers.
// The caller stops it (it also dies with the test binary).
func (p *Env) Start(ctx context.Context, logName string, args ...string) (*localcluster.Portal, error) {
	return p.StartOn(ctx, 0, logName, args...)
}

// StartOn is Start on port of 127.0.0.1 (a free one when 0), for a portal whose URL
// must be known before it starts: the callback of a single sign-on provider.
func (p *Env) StartOn(ctx context.Context, port int, logName string, args ...string) (*localcluster.Portal, error) {
	return localcluster.StartPortal(ctx, localcluster.PortalOptions{
		Binary: p.Bin, Kubeconfig: p.Kubeconfig, LogPath: filepath.Join(p.cluster.StateDir, logName), Port: port,
		Args: append([]string{"--namespace", p.Namespace, "--admin-username", p.AdminUsername,
			"--admin-password-file", p.AdminPasswordFile}, args...),
	})
}
