package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mooringhq/mooring/internal/testutil"
)

// kubectl runs bin/k8s/kubectl against the suite's cluster and returns its output.
func kubectl(args ...string) (string, error) { return suite.Run(args...) }

// mustKubectl is kubectl that fails the test on error.
func mustKubectl(t *testing.T, args ...string) string {
	t.Helper()
	return suite.MustRun(t, args...)
}

// apply pipes a manifest into kubectl apply.
func apply(t *testing.T, ns, manifest string) {
	t.Helper()
	suite.Apply(t, ns, manifest)
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
