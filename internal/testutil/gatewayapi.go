package testutil

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// GatewayAPICRD is the path of a Gateway API CRD manifest (e.g. "httproutes") of the
// standard channel, read from the sigs.k8s.io/gateway-api module that go.mod pins: tests
// install the Gateway API from the module cache rather than from a copy in the repository.
func GatewayAPICRD(t testing.TB, resource string) string {
	t.Helper()
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/gateway-api")
	cmd.Dir = RepoRoot()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("find the gateway-api module: %v", err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "config", "crd", "standard", "gateway.networking.k8s.io_"+resource+".yaml")
}
