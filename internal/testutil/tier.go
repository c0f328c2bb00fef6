package testutil

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Tier is what a test needs to run, which decides the make target that runs it:
// `make test-unit`, `make test-integration` or `make test-e2e`.
type Tier string

const (
	// Unit tests need no control plane: builders, goldens, status, rules, scripts.
	Unit Tier = "unit"
	// Integration tests run against envtest: a kube-apiserver and etcd from bin/k8s,
	// with or without Mooring's manager in the test process.
	Integration Tier = "integration"
	// E2E tests run against a local cluster (internal/localcluster) with the operator
	// binary, or the real node.
	E2E Tier = "e2e"
)

// TiersEnv names the environment variable that selects tiers: a comma-separated list
// of unit, integration and e2e. Unset, every tier runs, so a plain `go test ./x` runs
// all of x's tests that this machine can run.
const TiersEnv = "MOORING_TEST_TIERS"

// Selected reports whether tests of tier run in this test process.
func Selected(tier Tier) bool {
	v, ok := os.LookupEnv(TiersEnv)
	if !ok || v == "" {
		return true
	}
	return slices.Contains(strings.Split(v, ","), string(tier))
}

// chosen reports whether tier was selected by name (a make target), rather than by
// default (a plain go test): missing binaries then fail the test instead of skipping it,
// so that a broken bin/k8s cannot turn a tier green by skipping all of it.
func chosen(tier Tier) bool {
	return slices.Contains(strings.Split(os.Getenv(TiersEnv), ","), string(tier))
}

// RequireTier skips t when tier is not selected, and when a control-plane binary it
// needs is missing from bin/k8s (naming `make tools`, which links them). When the tier
// was selected by name in MOORING_TEST_TIERS, missing binaries fail t instead.
func RequireTier(t testing.TB, tier Tier) {
	t.Helper()
	if tier == Unit {
		if !Selected(tier) {
			t.Skipf("%s test: %s=%s does not select it", tier, TiersEnv, os.Getenv(TiersEnv))
		}
		return
	}
	if why, fatal := Unavailable(tier, MissingAssets()); why != "" {
		if fatal {
			t.Fatal(why)
		}
		t.Skip(why)
	}
}

// Unavailable says why tests of tier cannot run here ("" when they can): the tier is
// not selected, or the binaries named in missing are not in bin/k8s. fatal is true when
// the tier was selected by name but its binaries are missing: the caller fails rather
// than skips. A TestMain whose every test needs the tier uses it before starting
// anything (see clusterenv.Main).
func Unavailable(tier Tier, missing []string) (why string, fatal bool) {
	if !Selected(tier) {
		return fmt.Sprintf("%s test: %s=%s does not select it", tier, TiersEnv, os.Getenv(TiersEnv)), false
	}
	if len(missing) == 0 {
		return "", false
	}
	return fmt.Sprintf("%s test: %v missing in %s; run `make tools` (it links the pinned binaries)", tier, missing, AssetsDir()), chosen(tier)
}

// RequireTools skips t, as RequireTier does for the integration tier, unless the named
// binaries that `make tools` links (kubectl, controller-gen) are in bin/k8s: a test that
// starts no control plane but renders manifests with `kubectl kustomize` needs them too.
func RequireTools(t testing.TB, names ...string) {
	t.Helper()
	RequireBinaries(t, Integration, names...)
}

// RequireBinaries is RequireTools for a test of tier: an end-to-end test that also needs
// a binary of bin/k8s (Hydra, for single sign-on) runs, skips or fails with its own tier.
func RequireBinaries(t testing.TB, tier Tier, names ...string) {
	t.Helper()
	if why, fatal := Unavailable(tier, missingIn(filepath.Join(RepoRoot(), "bin", "k8s"), names)); why != "" {
		if fatal {
			t.Fatal(why)
		}
		t.Skip(why)
	}
}

// MissingAssets are the envtest binaries (kube-apiserver, etcd) missing from AssetsDir.
func MissingAssets() []string { return missingIn(AssetsDir(), []string{"kube-apiserver", "etcd"}) }

func missingIn(dir string, names []string) []string {
	var missing []string
	for _, name := range names {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			missing = append(missing, name)
		}
	}
	return missing
}
