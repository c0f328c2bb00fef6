package testutil

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Kubectl runs bin/k8s/kubectl against the test API server as a cluster admin, the way
// a user would, and returns its standard output; a failing command fails the test.
func (e *Env) Kubectl(t testing.TB, args ...string) string {
	t.Helper()
	e.Require(t)
	cmd := exec.Command(filepath.Join(AssetsDir(), "kubectl"), append([]string{"--kubeconfig", e.adminKubeconfig(t)}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kubectl %v: %v\n%s", args, err, stderr.String())
	}
	return stdout.String()
}

// adminKubeconfig writes a kubeconfig for a cluster admin on first use; parallel tests
// share it.
func (e *Env) adminKubeconfig(t testing.TB) string {
	t.Helper()
	e.usersMu.Lock()
	defer e.usersMu.Unlock()
	if e.kubeconfig != "" {
		return e.kubeconfig
	}
	user, err := e.env.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatalf("add kubectl user: %v", err)
	}
	cfg, err := user.KubeConfig()
	if err != nil {
		t.Fatalf("kubeconfig: %v", err)
	}
	path := filepath.Join(os.TempDir(), "mooring-envtest-kubeconfig-"+filepath.Base(e.env.ControlPlane.APIServer.CertDir))
	if err := os.WriteFile(path, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	e.kubeconfig = path
	return path
}
