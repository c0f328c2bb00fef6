package instance

import (
	"os"
	"path/filepath"
	"strings"
)

// ClusterInitializedKey is the key of the cluster's state ConfigMap that says the cluster
// has data: the operator sets it to "true" once the primary has first been ready (and
// records status.initialized), and never takes it back. It lives outside every pod's
// volume because the volume is what gets lost: with node-local storage a new, empty
// volume is an ordinary event, and it must not look like a new cluster.
const ClusterInitializedKey = "initialized"

// FaultPrimaryDataLost keeps a primary whose volume is empty from initialising a new,
// empty database in a cluster that has data: it would take writes that the replicas,
// which hold the data, cannot follow, and scheduled backups would dump it in place of
// the good dumps.
const FaultPrimaryDataLost = "PrimaryDataLost"

// clusterHasData reads the marker from the mounted ConfigMap. A missing file (a new
// cluster, or a manager run outside a pod) means no.
func (c Config) clusterHasData() bool {
	if c.ClusterStateDir == "" {
		return false
	}
	b, err := os.ReadFile(filepath.Join(c.ClusterStateDir, ClusterInitializedKey))
	return err == nil && strings.TrimSpace(string(b)) == "true"
}

// guardEmptyVolume decides what an instance whose data directory is missing may do. In
// a cluster without data, anything: the primary initialises, a replica clones. In a
// cluster with data, a replica clones the primary (and says so: it is not ready until
// the copy is complete), and the primary does nothing: it reports FaultPrimaryDataLost
// and waits, not ready, until its data is back. Cloning from the most advanced replica
// instead needs failover, which Mooring does not have yet.
func (m *manager) guardEmptyVolume() error {
	if !m.cfg.clusterHasData() {
		return nil
	}
	if m.cfg.Role() == RolePrimary {
		return faultf(FaultPrimaryDataLost, "the cluster has data (status.initialized) but the primary's data volume is empty: "+
			"Mooring does not initialise a new, empty database in its place, which would answer writes without the cluster's data. "+
			"The replicas still hold the data. Bring the volume back, or restore a Backup into a new cluster; promoting the most "+
			"advanced replica comes with failover, which Mooring does not do yet")
	}
	m.st.update(func(s *Status) { s.Cloning = true })
	m.log.Printf("the data volume is empty and the cluster has data: copying the primary %s; not ready until the copy is complete", m.cfg.PrimaryHost)
	return nil
}
