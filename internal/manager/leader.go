package manager

import (
	"os"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/mooringhq/mooring/internal/version"
)

// LeaseName is the operator's leader election Lease (kubectl mooring reads it as
// plugin.LeaseName).
const LeaseName = "mooring.dev"

// SetLeaderElection sets o's leader election as the operator runs it: when on, replicas
// elect a leader through Lease LeaseName in namespace ns (when empty, the namespace the
// pod runs in), a replica that stops cleanly releases it at once, and the Lease carries
// the leader's version (internal/version/lease.go says why there).
func SetLeaderElection(o *ctrl.Options, on bool, ns string) {
	o.LeaderElection = on
	o.LeaderElectionID = LeaseName
	o.LeaderElectionNamespace = ns
	o.LeaderElectionReleaseOnCancel = true
	host, err := os.Hostname()
	if err != nil {
		host = "" // controller-runtime fails to elect without a host name anyway
	}
	o.LeaderElectionLabels = version.LeaseLabels(host)
}
