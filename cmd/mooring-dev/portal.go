package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"k8s.io/client-go/rest"

	"github.com/mooringhq/mooring/internal/devenv"
	"github.com/mooringhq/mooring/internal/localcluster"
)

// adminPasswordFile keeps the first portal admin's password, readable by its owner only.
const adminPasswordFile = "portal-admin-password"

// startPortal installs the portal's RBAC and the user ClusterRoles, then runs the portal
// on 127.0.0.1 as its own ServiceAccount, creating the first admin ("admin") with the
// password kept in <state>/portal-admin-password (made on the first run, reused after,
// since the account outlives a restart in the cluster's store).
func startPortal(ctx context.Context, cfg config, restConfig *rest.Config, echo io.Writer, sup *localcluster.Supervisor) (*localcluster.Portal, error) {
	kubeconfig, _, err := devenv.InstallPortal(ctx, restConfig, cfg.root, filepath.Join(cfg.binDir, "kubectl"), cfg.state)
	if err != nil {
		return nil, fmt.Errorf("install the portal's RBAC: %w", err)
	}
	pwPath, err := adminPassword(cfg.state)
	if err != nil {
		return nil, err
	}
	return localcluster.StartPortal(ctx, localcluster.PortalOptions{
		Binary:     cfg.portal,
		Kubeconfig: kubeconfig,
		LogPath:    filepath.Join(cfg.state, "logs", "portal.log"),
		Echo:       echo,
		// Browsers reach the local portal over plain HTTP on localhost: Secure cookies
		// and HSTS there would pin localhost to HTTPS for every other local service.
		Args:       []string{"--namespace", devenv.PortalNamespace, "--admin-password-file", pwPath, "--secure-cookies=false"},
		Supervisor: sup,
	})
}

// adminPassword returns the path of the admin password file, writing a random password
// with mode 0600 when there is none.
func adminPassword(state string) (string, error) {
	path, err := filepath.Abs(filepath.Join(state, adminPasswordFile))
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(path); err == nil {
		return path, os.Chmod(path, 0o600)
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	b := make([]byte, 18)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	if err := os.WriteFile(path, []byte(base64.RawURLEncoding.EncodeToString(b)+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return path, nil
}
