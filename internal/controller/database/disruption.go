package database

import (
	policyv1 "k8s.io/api/policy/v1"

	"github.com/mooringhq/mooring/api/v1beta1"
	"github.com/mooringhq/mooring/internal/controller/availability"
)

// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;update;patch;delete

// PodDisruptionBudget lets a node drain evict one of the cluster's pods at a time (at most
// one unavailable over all instances), so a drain never takes the primary and a replica at
// once, nor two replicas; while a pod is not ready no other may be evicted.
//
// Not CloudNativePG's pair (a budget of minAvailable 1 over the primary, and one over the
// replicas): its primary budget blocks every drain of the primary's node until its
// operator has switched the primary over to another instance, which Mooring does not do
// (pod 0 is the primary), so here it would block that drain for good. With this budget a
// drain may take the primary while every replica is ready: writes stop until it runs
// again (docs/databases.md).
//
// A single-instance cluster gets none, as a single-replica cache or App does: a budget
// that allowed the eviction would say nothing, and one that refused it (CloudNativePG's
// default, which its documentation tells development clusters to turn off) would hold
// every drain of the node, node upgrades included, until someone deleted the pod by hand.
func PodDisruptionBudget(db *v1beta1.DatabaseCluster) *policyv1.PodDisruptionBudget {
	if db.Spec.ReplicaCount <= 1 {
		return nil
	}
	return availability.DisruptionBudget(Component, db.Name)
}
