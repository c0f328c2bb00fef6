package monitoring_test

import (
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/mooringhq/mooring/internal/dashboards"
)

// mooringJob is the job label of the series scraped from Mooring's metrics Service, the
// ServiceMonitor's targets.
const mooringJob = "mooring-metrics-service"

// unscopedSelectors returns the selectors of expr that read a metric any operator may
// export (the operator's registry holds it and its name is not Mooring's own, or it is
// Prometheus's up) without selecting Mooring's job.
func unscopedSelectors(expr string, known map[string]bool) ([]string, error) {
	e, err := parser.NewParser(parser.Options{}).ParseExpr(grafanaVars.Replace(expr))
	if err != nil {
		return nil, err
	}
	var out []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok || strings.HasPrefix(vs.Name, "mooring_") || !known[vs.Name] {
			return nil
		}
		for _, m := range vs.LabelMatchers {
			if m.Name == "job" && m.Type == labels.MatchEqual && m.Value == mooringJob {
				return nil
			}
		}
		out = append(out, vs.String())
		return nil
	})
	return out, nil
}

// TestSharedMetricsSelectMooringsJob: controller-runtime's, client-go's and the
// workqueue's metrics have the same names in every operator built on them, and another
// one may run controllers or queues named app or backup. Every alert and panel that reads
// them must select job="mooring-metrics-service", or another operator's series feed
// Mooring's alerts and dashboards.
func TestSharedMetricsSelectMooringsJob(t *testing.T) {
	known := knownNames(t)
	_, spec := rulesFile(t)
	var checked int
	for _, g := range spec.Groups {
		for _, r := range g.Rules {
			bad, err := unscopedSelectors(r.Expr, known)
			if err != nil {
				t.Errorf("%s: %v", r.Alert, err)
			}
			for _, s := range bad {
				t.Errorf("%s: %s does not select job=%q", r.Alert, s, mooringJob)
			}
			checked++
		}
	}
	for _, f := range dashboards.Files {
		for title, exprs := range panelQueries(t, f.Name) {
			for _, expr := range exprs {
				bad, err := unscopedSelectors(expr, known)
				if err != nil {
					t.Errorf("%s: panel %q: %v", f.Name, title, err)
				}
				for _, s := range bad {
					t.Errorf("%s: panel %q: %s does not select job=%q", f.Name, title, s, mooringJob)
				}
				checked++
			}
		}
	}
	if checked == 0 {
		t.Fatal("no alert or panel query checked")
	}
}
