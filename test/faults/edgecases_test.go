package faults

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The valid edge cases of the admission catalogue (test/admission/valid.yaml: the longest
// names, the smallest values) run: every object reaches Running, the Backup Scheduled.
func TestAdmissionEdgeCasesRun(t *testing.T) {
	suite.EnsureOperator(t)
	ns := suite.Namespace(t, "edge-cases")
	data, err := os.ReadFile(filepath.Join(suite.Root, "test", "admission", "valid.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	suite.Apply(t, ns, string(data))
	t0 := time.Now()
	for _, kind := range []string{"apps", "cacheinstances", "databaseclusters"} {
		suite.WaitAllField(t, 3*time.Minute, ns, kind, ".status.phase", "Running")
	}
	suite.WaitAllField(t, time.Minute, ns, "backups", ".status.phase", "Scheduled")
	// Running, the databases have their generated Secrets, and they stay: the package's
	// leak check must look for their passwords.
	for _, secret := range strings.Fields(suite.MustRun(t, "get", "databaseclusters.v1beta1.mooring.dev", "-n", ns, "-o", "jsonpath={.items[*].spec.secretName}")) {
		suite.ExpectPassword(ns, secret)
	}
	t.Logf("every edge case running %s after it was applied", time.Since(t0).Round(100*time.Millisecond))
}
