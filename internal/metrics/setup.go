package metrics

import (
	"fmt"
	"path/filepath"

	"github.com/prometheus/client_golang/prometheus"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/mooringhq/mooring/internal/version"
)

// Options say where the collectors register and what they read.
type Options struct {
	// Registerer receives the collectors: controller-runtime's metrics.Registry in the
	// operator, a registry of its own in a test that runs several managers.
	Registerer prometheus.Registerer
	// WebhookCertDir holds the webhook server's tls.crt; empty when webhooks are served
	// with a certificate Mooring does not read (no certificate metric then).
	WebhookCertDir string
}

// Add registers Mooring's collectors for mgr: the resource collector over mgr's cache
// (leader only), build information and the webhook certificate's expiry.
func Add(mgr ctrl.Manager, o Options) error {
	leader := &leaderFlag{}
	if err := mgr.Add(leader); err != nil {
		return fmt.Errorf("add leader flag for metrics: %w", err)
	}
	build := version.Get()
	var cert certExpiry
	if o.WebhookCertDir != "" {
		cert.path = filepath.Join(o.WebhookCertDir, "tls.crt")
	}
	for _, c := range []prometheus.Collector{
		NewResourceCollector(mgr.GetCache(), leader.Leading, mgr.GetLogger().WithName("metrics")),
		NewBuildInfo(build.Version, build.Revision),
		cert,
	} {
		if err := o.Registerer.Register(c); err != nil {
			return fmt.Errorf("register metrics collector: %w", err)
		}
	}
	return nil
}
