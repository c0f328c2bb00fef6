package monitoring_test

import (
	"fmt"
	"sort"
	"strings"

	"github.com/prometheus/prometheus/promql/parser"
)

// grafanaVars replaces the Grafana variables the dashboards use with values Prometheus
// would see, so that a panel query can be parsed like the one Grafana sends.
var grafanaVars = strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$__range", "1h",
	`"$namespace"`, `".*"`)

// metricNames parses expr and returns the metric names its selectors use.
func metricNames(expr string) ([]string, error) {
	e, err := parser.NewParser(parser.Options{}).ParseExpr(grafanaVars.Replace(expr))
	if err != nil {
		return nil, fmt.Errorf("parse %q: %w", expr, err)
	}
	seen := map[string]bool{}
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			seen[vs.Name] = true
		}
		return nil
	})
	var out []string
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	if len(out) == 0 {
		return nil, fmt.Errorf("%q selects no metric", expr)
	}
	return out, nil
}
