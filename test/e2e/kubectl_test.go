package e2e

import (
	"bytes"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mooringhq/mooring/internal/testutil"
)

// kubectl runs bin/k8s/kubectl against the suite's cluster and returns its output.
func kubectl(args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(suite.BinDir, "kubectl"), append([]string{"--kubeconfig", suite.Cluster.KubeconfigPath}, args...)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errOut.String()))
	}
	return out.String(), nil
}

// mustKubectl is kubectl that fails the test on error.
func mustKubectl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := kubectl(args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// apply pipes a manifest into kubectl apply.
func apply(t *testing.T, ns, manifest string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(suite.BinDir, "kubectl"), "--kubeconfig", suite.Cluster.KubeconfigPath, "apply", "-n", ns, "-f", "-")
	cmd.Stdin = strings.NewReader(manifest)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply: %v\n%s\n---\n%s", err, out, manifest)
	}
}

// jsonpath reads one field with kubectl get -o jsonpath.
func jsonpath(ns, resource, path string) (string, error) {
	return kubectl("get", "-n", ns, resource, "-o", "jsonpath={"+path+"}")
}

// waitField polls a jsonpath until it equals want.
func waitField(t *testing.T, timeout time.Duration, ns, resource, path, want string) {
	t.Helper()
	testutil.Eventually(t, timeout, fmt.Sprintf("%s %s == %q", resource, path, want), func() error {
		got, err := jsonpath(ns, resource, path)
		if err != nil {
			return err
		}
		if strings.TrimSpace(got) != want {
			return fmt.Errorf("%s is %q", path, got)
		}
		return nil
	})
}

// namespace creates a namespace for one test.
func namespace(t *testing.T, name string) string {
	t.Helper()
	mustKubectl(t, "create", "namespace", name)
	return name
}
