package monitoring_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
)

var (
	apiServerOnce     sync.Once
	apiServerGathered map[string]*dto.MetricFamily
	apiServerErr      error
)

// apiServerFamilies returns the metric families the test's kube-apiserver (the version
// go.mod pins) serves on /metrics, after it converted the exercise's DatabaseCluster
// through Mooring's conversion webhook. Alerts on what only the API server can see are
// checked against these, so a metric or label renamed upstream fails here rather than
// leave an alert that never fires.
func apiServerFamilies(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	families(t) // the exercise stores a DatabaseCluster in v1beta1
	apiServerOnce.Do(func() { apiServerGathered, apiServerErr = gatherAPIServer() })
	if apiServerErr != nil {
		t.Fatalf("gather the API server's metrics: %v", apiServerErr)
	}
	return apiServerGathered
}

func gatherAPIServer() (map[string]*dto.MetricFamily, error) {
	ctx := context.Background()
	// Reading the stored v1beta1 objects as v1alpha1 makes the API server call /convert,
	// which creates the series of its conversion histogram.
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("mooring.dev/v1alpha1")
	list.SetKind("DatabaseClusterList")
	if err := env.Client.List(ctx, list); err != nil {
		return nil, fmt.Errorf("list DatabaseClusters as v1alpha1: %w", err)
	}
	if len(list.Items) == 0 {
		return nil, fmt.Errorf("no DatabaseCluster to convert")
	}
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		return nil, err
	}
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("GET /metrics: %w", err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(bytes.NewReader(raw))
}

// apiServerFamily returns the family a series name of the API server belongs to.
func apiServerFamily(fams map[string]*dto.MetricFamily, series string) *dto.MetricFamily {
	if f, ok := fams[series]; ok {
		return f
	}
	for _, suffix := range []string{"_count", "_sum", "_bucket"} {
		if f, ok := fams[strings.TrimSuffix(series, suffix)]; ok && strings.HasSuffix(series, suffix) {
			return f
		}
	}
	return nil
}

// TestAPIServerSelectorsMatchTheAPIServer: every selector of an alert on an API server
// metric names labels that the API server puts on it, and the crd_name it selects is the
// one the API server reports for Mooring's DatabaseCluster conversions.
func TestAPIServerSelectorsMatchTheAPIServer(t *testing.T) {
	env.Require(t)
	_, spec := rulesFile(t)
	fams := apiServerFamilies(t)
	operator := knownNames(t)
	var checked int
	for _, g := range spec.Groups {
		for _, r := range g.Rules {
			expr, err := parser.NewParser(parser.Options{}).ParseExpr(r.Expr)
			if err != nil {
				t.Fatalf("%s: %v", r.Alert, err)
			}
			parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
				vs, ok := n.(*parser.VectorSelector)
				if !ok || operator[vs.Name] {
					return nil
				}
				f := apiServerFamily(fams, vs.Name)
				if f == nil {
					return nil // TestRuleExpressionsUseExportedMetrics reports it
				}
				checked++
				have := map[string]map[string]bool{}
				for _, m := range f.GetMetric() {
					for _, l := range m.GetLabel() {
						if have[l.GetName()] == nil {
							have[l.GetName()] = map[string]bool{}
						}
						have[l.GetName()][l.GetValue()] = true
					}
				}
				for _, m := range vs.LabelMatchers {
					// job is the scrape's target label, not the API server's.
					if m.Name == model.MetricNameLabel || m.Name == "job" {
						continue
					}
					values, ok := have[m.Name]
					if !ok {
						t.Errorf("%s: %s has no label %q; the API server serves it with %v", r.Alert, vs.Name, m.Name, keys(have))
						continue
					}
					if m.Name == "crd_name" && m.Type == labels.MatchEqual && !values[m.Value] {
						t.Errorf("%s: %s{crd_name=%q} does not exist after a conversion; the API server reports crd_name %v", r.Alert, vs.Name, m.Value, keys(values))
					}
				}
				return nil
			})
		}
	}
	if checked == 0 {
		t.Error("no alert selects an API server metric; MooringConversionWebhookErrors should")
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
