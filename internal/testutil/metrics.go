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

// ChildOperations is the engine's mooring_child_operations_total for one child kind and
// result ("created", "updated", "deleted", ...), summed over the controllers that made them.
func ChildOperations(t testing.TB, kind, result string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatalf("gather metrics: %v", err)
	}
	var n float64
	for _, f := range families {
		if f.GetName() != "mooring_child_operations_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["kind"] == kind && labels["result"] == result {
				n += m.GetCounter().GetValue()
			}
		}
	}
	return n
}
