package metrics

import (
	"runtime"

	"github.com/prometheus/client_golang/prometheus"
)

// NewBuildInfo returns the constant gauge mooring_build_info, 1 with the version, revision
// and Go version as labels: joined with other series it shows which build runs where.
func NewBuildInfo(version, revision string) prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "mooring_build_info",
		Help: "Always 1; the labels say which build of Mooring is running.",
		ConstLabels: prometheus.Labels{
			"version": version, "revision": revision, "go_version": runtime.Version(),
		},
	}, func() float64 { return 1 })
}
