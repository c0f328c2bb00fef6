package monitoring_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/mooringhq/mooring/internal/testutil"
)

// serviceMonitor is the part of a ServiceMonitor these tests read.
type serviceMonitor struct {
	Kind string `json:"kind"`
	Spec struct {
		Endpoints []struct {
			Port        string `json:"port"`
			HonorLabels bool   `json:"honorLabels"`
		} `json:"endpoints"`
	} `json:"spec"`
}

// templateAction matches a Helm template action, which the chart's generated templates
// hold only as whole lines or as scalar values.
var templateAction = regexp.MustCompile(`\{\{.*?\}\}`)

// TestServiceMonitorHonoursMooringsLabels: the mooring_resource_* and mooring_backup_*
// series carry the namespace of the object they describe. Without honorLabels the
// Prometheus Operator's target label namespace (the operator's own) overwrites it, and
// the alerts' joins on (namespace, name) collide for same-named objects. Both the
// kustomize ServiceMonitor and the chart's must keep the series' labels.
func TestServiceMonitorHonoursMooringsLabels(t *testing.T) {
	root := testutil.RepoRoot()
	for _, rel := range []string{
		"config/prometheus/monitor.yaml",
		"charts/mooring/templates/generated/servicemonitor-mooring-controller-manager.yaml",
	} {
		data, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		var lines []string
		for _, l := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(strings.TrimSpace(l), "{{") {
				continue // if/with/include lines of a template
			}
			lines = append(lines, templateAction.ReplaceAllString(l, "templated"))
		}
		var sm serviceMonitor
		if err := yaml.Unmarshal([]byte(strings.Join(lines, "\n")), &sm); err != nil {
			t.Fatalf("%s: %v", rel, err)
		}
		if sm.Kind != "ServiceMonitor" || len(sm.Spec.Endpoints) == 0 {
			t.Fatalf("%s: want a ServiceMonitor with endpoints, have kind %q with %d endpoints", rel, sm.Kind, len(sm.Spec.Endpoints))
		}
		for _, e := range sm.Spec.Endpoints {
			if !e.HonorLabels {
				t.Errorf("%s: endpoint %q does not set honorLabels: true, so the target's namespace label would replace the namespace of Mooring's per-object series", rel, e.Port)
			}
		}
	}
}
