package engine

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// childWrites counts what Apply and prune did per child kind: created, updated, deleted,
// or skipped because the live child already matched. On a converged cluster only
// "skipped" grows.
var childWrites = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "mooring_child_operations_total",
	Help: "Operations on child objects by kind and result (created, updated, deleted, skipped).",
}, []string{"kind", "result"})

func init() {
	metrics.Registry.MustRegister(childWrites)
}
