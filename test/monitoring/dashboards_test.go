package monitoring_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/mooringhq/mooring/internal/dashboards"
	"github.com/mooringhq/mooring/internal/testutil"
)

// TestCommittedDashboardsMatchTheGenerator: config/grafana is what internal/dashboards
// builds; edit the Go code and run `make dashboards`, never the JSON.
func TestCommittedDashboardsMatchTheGenerator(t *testing.T) {
	for _, f := range dashboards.Files {
		d, err := f.Build()
		if err != nil {
			t.Fatalf("build %s: %v", f.Name, err)
		}
		want, err := dashboards.JSON(d)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "config", "grafana", f.Name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("config/grafana/%s differs from what internal/dashboards builds: run `make dashboards`", f.Name)
		}
	}
}

// panelQueries returns every panel's query expressions by panel title.
func panelQueries(t *testing.T, file string) map[string][]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "config", "grafana", file))
	if err != nil {
		t.Fatal(err)
	}
	queries, err := dashboards.PanelQueries(data)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return queries
}

func TestDashboardQueriesUseExportedMetrics(t *testing.T) {
	known := knownNames(t)
	for _, f := range dashboards.Files {
		panels := panelQueries(t, f.Name)
		if len(panels) == 0 {
			t.Errorf("%s has no panels", f.Name)
		}
		for title, exprs := range panels {
			if len(exprs) == 0 {
				t.Errorf("%s: panel %q has no query", f.Name, title)
			}
			for _, expr := range exprs {
				names, err := metricNames(expr)
				if err != nil {
					t.Errorf("%s: panel %q: %v", f.Name, title, err)
					continue
				}
				if u := unknown(names, known); len(u) > 0 {
					t.Errorf("%s: panel %q uses metrics the operator does not export: %v", f.Name, title, u)
				}
			}
		}
	}
}
