package monitoring_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/mooringhq/mooring/internal/testutil"
)

type rule struct {
	Alert       string            `json:"alert"`
	Record      string            `json:"record"`
	Expr        string            `json:"expr"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

type ruleSpec struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []rule `json:"rules"`
	} `json:"groups"`
}

// rulesFile reads config/prometheus/rules.yaml and returns its PrometheusRule spec, which
// is a Prometheus rule file, raw and parsed.
func rulesFile(t *testing.T) ([]byte, ruleSpec) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "config", "prometheus", "rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var pr struct {
		Kind string          `json:"kind"`
		Spec json.RawMessage `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &pr); err != nil {
		t.Fatalf("rules.yaml: %v", err)
	}
	if pr.Kind != "PrometheusRule" {
		t.Fatalf("rules.yaml holds a %q, want a PrometheusRule", pr.Kind)
	}
	var spec ruleSpec
	if err := json.Unmarshal(pr.Spec, &spec); err != nil {
		t.Fatal(err)
	}
	ruleFile, err := yaml.JSONToYAML(pr.Spec)
	if err != nil {
		t.Fatal(err)
	}
	return ruleFile, spec
}

func promtool(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool not found: install Debian's prometheus package (.ci/run does)")
	}
	return path
}

// TestRulesPassPromtool runs promtool's rule check and the unit tests of every alert.
func TestRulesPassPromtool(t *testing.T) {
	ruleFile, _ := rulesFile(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), ruleFile, 0o600); err != nil {
		t.Fatal(err)
	}
	tests, err := os.ReadFile(filepath.Join("testdata", "rules_test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "rules_test.yaml"), tests, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"check", "rules", "rules.yaml"}, {"test", "rules", "rules_test.yaml"}} {
		cmd := exec.Command(promtool(t), args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// TestEveryAlertIsComplete: severity, summary, description, a runbook that exists and a
// promtool unit test in which it fires.
func TestEveryAlertIsComplete(t *testing.T) {
	_, spec := rulesFile(t)
	tests, err := os.ReadFile(filepath.Join("testdata", "rules_test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var unit struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string           `json:"alertname"`
				ExpAlerts []map[string]any `json:"exp_alerts"`
			} `json:"alert_rule_test"`
		} `json:"tests"`
	}
	if err := yaml.Unmarshal(tests, &unit); err != nil {
		t.Fatal(err)
	}
	fires := map[string]bool{}
	for _, tc := range unit.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			}
		}
	}
	var n int
	for _, g := range spec.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			n++
			if s := r.Labels["severity"]; s != "critical" && s != "warning" {
				t.Errorf("%s: severity %q, want critical or warning", r.Alert, s)
			}
			for _, a := range []string{"summary", "description", "runbook_url"} {
				if r.Annotations[a] == "" {
					t.Errorf("%s: no %s annotation", r.Alert, a)
				}
			}
			rel := "docs/runbooks/" + r.Alert + ".md"
			if !strings.HasSuffix(r.Annotations["runbook_url"], "/"+rel) {
				t.Errorf("%s: runbook_url %q does not point at %s", r.Alert, r.Annotations["runbook_url"], rel)
			}
			book, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), rel))
			if err != nil {
				t.Errorf("%s: %v", r.Alert, err)
			} else if !strings.Contains(string(book), "## What to check") || !strings.Contains(string(book), "## What to do") {
				t.Errorf("%s: the runbook does not say what to check and what to do", rel)
			}
			if !fires[r.Alert] {
				t.Errorf("%s: no promtool unit test in which it fires", r.Alert)
			}
		}
	}
	if n < 10 {
		t.Errorf("%d alerts, the issue asks for at least ten kinds", n)
	}
}

// TestRuleExpressionsUseExportedMetrics parses every expression and checks its metric
// names against the operator's gathered registry and, for the alerts that judge what the
// API server sees, the API server's.
func TestRuleExpressionsUseExportedMetrics(t *testing.T) {
	_, spec := rulesFile(t)
	known := knownNames(t)
	for _, f := range apiServerFamilies(t) {
		addSeriesNames(known, f)
	}
	for _, g := range spec.Groups {
		for _, r := range g.Rules {
			names, err := metricNames(r.Expr)
			if err != nil {
				t.Errorf("%s: %v", r.Alert, err)
				continue
			}
			if u := unknown(names, known); len(u) > 0 {
				t.Errorf("%s uses metrics neither the operator nor the API server exports: %v", r.Alert, u)
			}
		}
	}
}

// metricLike matches a code span that names a metric of the kinds the operator exports:
// Mooring's own, controller-runtime's, client-go's and the workqueue's.
var metricLike = regexp.MustCompile("`((?:mooring|controller_runtime|rest_client|workqueue|leader_election)_[a-z0-9_]+)")

// TestRunbooksCiteExportedMetrics fails when a runbook sends an operator to a metric that
// the operator does not serve.
func TestRunbooksCiteExportedMetrics(t *testing.T) {
	known := knownNames(t)
	books, err := filepath.Glob(filepath.Join(testutil.RepoRoot(), "docs", "runbooks", "*.md"))
	if err != nil || len(books) == 0 {
		t.Fatalf("no runbooks found: %v", err)
	}
	for _, path := range books {
		text, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var cited []string
		for _, m := range metricLike.FindAllStringSubmatch(string(text), -1) {
			cited = append(cited, m[1])
		}
		if u := unknown(cited, known); len(u) > 0 {
			t.Errorf("%s cites metrics the operator does not export: %v", filepath.Base(path), u)
		}
	}
}
