package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestChartAcceptedByAPIServer sends every object of the chart's default and minimal
// renders (hack/chart/testdata, kept current by that package's golden test) to the real
// API server as a server-side dry run, in a namespace that enforces the restricted Pod
// Security Standard: schemas, RBAC rules, webhook configurations and the Deployment's pod
// template must all be accepted. A dry run, because the chart's webhook configurations
// share their names with the ones this suite's operator serves.
func TestChartAcceptedByAPIServer(t *testing.T) {
	ns := suite.Namespace(t, "platform")
	// warn as well as enforce: PodSecurity checks workload pod templates only in warn
	// and audit modes.
	suite.MustRun(t, "label", "namespace", ns, "pod-security.kubernetes.io/enforce=restricted", "pod-security.kubernetes.io/warn=restricted")
	for _, set := range []string{"default", "minimal"} {
		path := filepath.Join(suite.Root, "hack", "chart", "testdata", set+".yaml")
		manifest, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		// The suite's own webhook configurations (URLs on localhost) have these names; an
		// apply over them would merge url and service, so the chart's go by other names.
		renamed := strings.ReplaceAll(string(manifest), "name: mooring-mutating-webhook-configuration", "name: chart-dry-run-mutating")
		renamed = strings.ReplaceAll(renamed, "name: mooring-validating-webhook-configuration", "name: chart-dry-run-validating")
		// Combined output: PodSecurity reports a violating pod template as a warning.
		cmd := suite.Kubectl("apply", "--server-side", "--force-conflicts", "--field-manager=helm-dry-run", "--dry-run=server", "-f", "-")
		cmd.Stdin = strings.NewReader(renamed)
		outBytes, err := cmd.CombinedOutput()
		out := string(outBytes)
		if err != nil {
			t.Errorf("%s render rejected: %v\n%s", set, err, out)
			continue
		}
		if strings.Contains(out, "PodSecurity") {
			t.Errorf("%s render violates the restricted Pod Security Standard:\n%s", set, out)
		}
		if want, got := strings.Count(string(manifest), "\nkind: "), strings.Count(out, "serverside-applied"); got != want {
			t.Errorf("%s render: %d objects accepted, want %d:\n%s", set, got, want, out)
		}
	}
}
