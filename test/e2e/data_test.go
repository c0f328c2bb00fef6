package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func applySample(t *testing.T, ns, file string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(suite.Root, "config", "samples", file))
	if err != nil {
		t.Fatal(err)
	}
	suite.Apply(t, ns, string(data))
}

func TestCacheInstanceRuns(t *testing.T) {
	ns := suite.Namespace(t, "cache")
	applySample(t, ns, "mooring_v1_cacheinstance.yaml")
	name := strings.TrimSpace(suite.MustRun(t, "get", "cacheinstances", "-n", ns, "-o", "jsonpath={.items[0].metadata.name}"))
	suite.WaitField(t, rollout, ns, "cacheinstance/"+name, ".status.phase", "Running")
	out := suite.MustRun(t, "get", "cacheinstances", "-n", ns)
	if got := strings.Join(strings.Fields(strings.SplitN(out, "\n", 2)[0]), " "); got != "NAME ENGINE REPLICAS MEMORY AVAILABLE PHASE AGE" {
		t.Errorf("kubectl get cacheinstances columns = %q", got)
	}
}

// A DatabaseCluster of each engine reaches Running on kwok nodes, its volumes bound by the
// local cluster's dev-only provisioner; the MariaDB one is created through v1alpha1.
func TestDatabaseClustersRun(t *testing.T) {
	ns := suite.Namespace(t, "databases")
	applySample(t, ns, "mooring_v1beta1_databasecluster.yaml")
	applySample(t, ns, "mooring_v1alpha1_databasecluster.yaml")
	for _, name := range []string{"orders", "inventory"} {
		suite.WaitField(t, rollout, ns, "databasecluster/"+name, ".status.phase", "Running")
	}
	suite.WaitField(t, rollout, ns, "databasecluster/orders", ".status.readyReplicas", "2")
	suite.WaitField(t, rollout, ns, "pvc/data-orders-1", ".status.phase", "Bound")
	suite.WaitField(t, rollout, ns, "databasecluster.v1beta1.mooring.dev/inventory", ".spec.replicaCount", "1")
	suite.WaitField(t, rollout, ns, "databasecluster/inventory", ".spec.version", "11.8")
	suite.WaitField(t, rollout, ns, "databasecluster/orders", ".status.primaryEndpoint", "orders."+ns+".svc:5432")
	if _, err := suite.Run("get", "secret", "orders-credentials", "-n", ns); err != nil {
		t.Errorf("generated Secret missing: %v", err)
	}
	// The package's leak check must look for this password (the cluster stays).
	suite.ExpectPassword(ns, "orders-credentials")
	out := suite.MustRun(t, "get", "databaseclusters", "-n", ns)
	if got := strings.Join(strings.Fields(strings.SplitN(out, "\n", 2)[0]), " "); got != "NAME ENGINE VERSION REPLICAS READY PHASE AGE" {
		t.Errorf("kubectl get databaseclusters columns = %q", got)
	}
	t.Logf("kubectl get databaseclusters:\n%s", out)
}
