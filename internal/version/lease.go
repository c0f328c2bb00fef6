package version

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Where the running operator publishes its version for `kubectl mooring version`: as
// labels on its leader election Lease (mooring.dev in the operator's namespace), put there
// by the leader election itself (controller-runtime's LeaderElectionLabels) each time a
// replica takes or renews the Lease.
//
// Why the Lease: it names the replica that reconciles (spec.holderIdentity), which in a
// rolling upgrade is the one whose version matters; reading it needs only `get leases` in
// the operator's namespace, which whoever may read that namespace has, and which
// `kubectl mooring doctor` already needs; and the operator may already write it (the
// leader election Role), so no RBAC is added. The elector writes the labels with the
// same update that takes the Lease, so no second writer races it and they cannot be
// older than the holder. Not a Pod annotation: the operator would need to patch pods in
// its own namespace and be told its pod name. Not the metrics endpoint: users rarely may
// reach it.
//
// An operator run without --leader-elect (make run, mooring-dev) holds no Lease and so
// publishes nothing: there the start log line and mooring_build_info say its version.
const (
	// LeaseVersionLabel is Info.Version.
	LeaseVersionLabel = "mooring.dev/version"
	// LeaseRevisionLabel is Info.Revision.
	LeaseRevisionLabel = "mooring.dev/revision"
	// LeaseHostLabel is the host name of the replica that set the labels. Leader election
	// identities are "<host name>_<uuid>", so a reader can tell labels of the current
	// holder from ones an earlier holder left (a version before these labels does not
	// overwrite them).
	LeaseHostLabel = "mooring.dev/host"
)

// LeaseLabels are the labels for the leader election Lease of a replica on host. Each
// value is made a valid label value (a version with "+" would otherwise make the API
// server refuse the Lease, and the operator never lead): characters a label value may
// not hold become "_", and a value that still is not valid is left empty. Every key is
// always set, empty or not, so that no earlier holder's value stays.
func LeaseLabels(host string) map[string]string {
	i := Get()
	return map[string]string{
		LeaseVersionLabel:  labelValue(i.Version),
		LeaseRevisionLabel: labelValue(i.Revision),
		LeaseHostLabel:     labelValue(host),
	}
}

// labelValue makes v a valid label value, or "" when it cannot be.
func labelValue(v string) string {
	if len(validation.IsValidLabelValue(v)) == 0 {
		return v
	}
	v = strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || r == '.' || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') || ('0' <= r && r <= '9') {
			return r
		}
		return '_'
	}, v)
	if len(v) > validation.LabelValueMaxLength {
		v = v[:validation.LabelValueMaxLength]
	}
	v = strings.Trim(v, "-_.")
	if len(validation.IsValidLabelValue(v)) != 0 {
		return ""
	}
	return v
}
