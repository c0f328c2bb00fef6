package testutil

import (
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// ReconcileCount is controller-runtime's controller_runtime_reconcile_total for one
// controller, summed over results.
func ReconcileCount(t testing.TB, controller string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatalf("gather metrics: %v", err)
	}
	var n float64
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == controller {
					n += m.GetCounter().GetValue()
				}
			}
		}
	}
	return n
}
