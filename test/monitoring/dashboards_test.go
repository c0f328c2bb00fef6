package monitoring_test

import (
	"bytes"
	"encoding/json"
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
	var d struct {
		Panels []struct {
			Type    string `json:"type"`
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	out := map[string][]string{}
	for _, p := range d.Panels {
		if p.Type == "row" {
			continue
		}
		out[p.Title] = nil
		for _, tg := range p.Targets {
			out[p.Title] = append(out[p.Title], tg.Expr)
		}
	}
	return out
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
