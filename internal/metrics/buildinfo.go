package metrics

import (
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
)

// Version is Mooring's release version, set at build time with
// -ldflags "-X github.com/mooringhq/mooring/internal/metrics.Version=v1.2.3".
var Version = "dev"

// Revision is the VCS revision the binary was built from, when Go recorded it.
func Revision() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" {
				return s.Value
			}
		}
	}
	return "unknown"
}

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
