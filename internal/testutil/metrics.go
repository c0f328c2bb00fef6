package testutil

import (
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// ReconcileCount is controller-runtime's controller_runtime_reconcile_total for one
// controller, summed over results.
func ReconcileCount(t testing.TB, controller string) float64 {
	t.Helper()
	return counterSum(t, "controller_runtime_reconcile_total", map[string]string{"controller": controller})
}

// ChildOperations is the engine's mooring_child_operations_total for one child kind and
// result ("created", "updated", "deleted", ...), summed over the controllers that made them.
func ChildOperations(t testing.TB, kind, result string) float64 {
	t.Helper()
	return counterSum(t, "mooring_child_operations_total", map[string]string{"kind": kind, "result": result})
}

// counterSum is the sum of the registry's counter name over the series carrying every
// label of want.
func counterSum(t testing.TB, name string, want map[string]string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatalf("gather metrics: %v", err)
	}
	var n float64
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			matched := 0
			for _, l := range m.GetLabel() {
				if v, ok := want[l.GetName()]; ok && v == l.GetValue() {
					matched++
				}
			}
			if matched == len(want) {
				n += m.GetCounter().GetValue()
			}
		}
	}
	return n
}
