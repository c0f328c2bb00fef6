package e2e

import "testing"

// kubectl runs bin/k8s/kubectl against the suite's cluster and returns its output.
func kubectl(args ...string) (string, error) { return suite.Run(args...) }

// mustKubectl is kubectl that fails the test on error.
func mustKubectl(t *testing.T, args ...string) string {
	t.Helper()
	return suite.MustRun(t, args...)
}

// jsonpath reads one field with kubectl get -o jsonpath.
func jsonpath(ns, resource, path string) (string, error) {
	return kubectl("get", "-n", ns, resource, "-o", "jsonpath={"+path+"}")
}
