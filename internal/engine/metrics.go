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

// ownershipConversions counts the conversions of a created child's field ownership
// (ownership.go) by kind and path: "renamed" by the one-request patch, "read" by the
// general path that reads managedFields first.
var ownershipConversions = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "mooring_child_ownership_conversions_total",
	Help: "Conversions of a created child's field ownership to server-side apply, by kind and path (renamed, read).",
}, []string{"kind", "path"})

func init() {
	metrics.Registry.MustRegister(childWrites, ownershipConversions)
}
