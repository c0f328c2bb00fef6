package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mooringhq/mooring/internal/devenv"
	"github.com/mooringhq/mooring/internal/testutil"
)

// storageVersionPatch makes v1alpha1 (alpha) or v1beta1 the DatabaseCluster CRD's storage version (index 0 is
// v1alpha1, index 1 v1beta1, as controller-gen orders them).
func storageVersionPatch(alpha bool) string {
	return fmt.Sprintf(`[{"op":"replace","path":"/spec/versions/0/storage","value":%t},{"op":"replace","path":"/spec/versions/1/storage","value":%t}]`, alpha, !alpha)
}

// TestStoredDatabaseClustersMigrate plays an upgrade from a release that stored
// DatabaseClusters as v1alpha1: objects are created (through both versions) while the CRD
// stores v1alpha1, the CRD is upgraded to store v1beta1 and the operator restarts. Its
// migrator must rewrite every object and trim status.storedVersions to [v1beta1], proved
// by removing v1alpha1 from the CRD, which the API server refuses while storedVersions
// lists it, and reading every object back, nothing lost.
func TestStoredDatabaseClustersMigrate(t *testing.T) {
	const crd = "crd/databaseclusters.mooring.dev"
	versions := mustKubectl(t, "get", crd, "-o", "jsonpath={.spec.versions[*].name}")
	if versions != "v1alpha1 v1beta1" {
		t.Fatalf("CRD versions %q, want v1alpha1 v1beta1 in this order", versions)
	}
	t.Cleanup(func() {
		// Put the CRD back as config/crd has it, for the tests after this one.
		if err := devenv.Install(context.Background(), suite.Config, suite.Root, suite.WebhookPort); err != nil {
			t.Errorf("reinstall CRDs: %v", err)
		}
	})
	mustKubectl(t, "patch", crd, "--type=json", "-p", storageVersionPatch(true))
	waitField(t, time.Minute, "", crd, ".status.storedVersions", `["v1beta1","v1alpha1"]`)

	ns := namespace(t, "migrate")
	apply(t, ns, "apiVersion: mooring.dev/v1alpha1\nkind: DatabaseCluster\nmetadata:\n  name: old\nspec:\n  engine: postgresql\n  replicas: 2\n  version: \"18\"\n")
	// Fields v1alpha1 lacks travel through its storage in an annotation.
	apply(t, ns, "apiVersion: mooring.dev/v1beta1\nkind: DatabaseCluster\nmetadata:\n  name: new\nspec:\n  engine: mysql\n  replicaCount: 3\n  storage:\n    size: 2Gi\n  deletionPolicy: Delete\n  secretName: new-db\n")
	before := map[string]string{}
	for _, name := range []string{"old", "new"} {
		before[name] = mustKubectl(t, "get", "-n", ns, "databasecluster.v1beta1.mooring.dev/"+name, "-o",
			"jsonpath={.spec.engine} {.spec.version} {.spec.replicaCount} {.spec.storage.size} {.spec.deletionPolicy} {.spec.secretName}")
	}

	// The upgrade: the CRD stores v1beta1 again, the operator restarts.
	mustKubectl(t, "patch", crd, "--type=json", "-p", storageVersionPatch(false))
	if err := stopOperator(); err != nil {
		t.Fatal(err)
	}
	if err := startOperator(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitField(t, 2*time.Minute, "", crd, ".status.storedVersions", `["v1beta1"]`)

	// v1alpha1 can go now; afterwards every object must still read, unchanged.
	mustKubectl(t, "patch", crd, "--type=json", "-p", `[{"op":"remove","path":"/spec/versions/0"}]`)
	for _, name := range []string{"old", "new"} {
		testutil.Eventually(t, time.Minute, name+" readable as v1beta1 with v1alpha1 removed", func() error {
			got, err := kubectl("get", "-n", ns, "databasecluster.v1beta1.mooring.dev/"+name, "-o",
				"jsonpath={.spec.engine} {.spec.version} {.spec.replicaCount} {.spec.storage.size} {.spec.deletionPolicy} {.spec.secretName}")
			if err != nil {
				return err
			}
			if got != before[name] {
				return fmt.Errorf("spec %q, was %q", got, before[name])
			}
			return nil
		})
	}
}
