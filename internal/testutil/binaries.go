package testutil

import (
	"fmt"
	"os"
	"os/exec"
)

// Environment variables naming binaries built once per test run: `make test-e2e` builds
// bin/ first and points them there, so each end-to-end package does not build its own.
const (
	OperatorBinEnv = "MOORING_OPERATOR_BIN"
	PortalBinEnv   = "MOORING_PORTAL_BIN"
)

// Binary returns the binary named by the environment variable env when set, else builds
// the package pkg (e.g. "./cmd/mooring") of this checkout into out, so that
// `go test ./test/e2e` alone never runs a stale binary.
func Binary(env, pkg, out string) (string, error) {
	if path := os.Getenv(env); path != "" {
		if _, err := os.Stat(path); err != nil {
			return "", fmt.Errorf("%s=%s: %w", env, path, err)
		}
		return path, nil
	}
	build := exec.Command("go", "build", "-o", out, pkg)
	build.Dir, build.Stdout, build.Stderr = RepoRoot(), os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return "", fmt.Errorf("build %s: %w", pkg, err)
	}
	return out, nil
}
