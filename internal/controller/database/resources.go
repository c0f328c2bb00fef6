package database

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/mooringhq/mooring/api/v1beta1"
)

// The database container's resources when spec.resources is unset: enough for a small
// database (the servers' memory settings follow the limit: PostgreSQL's shared_buffers
// of 128MB, InnoDB's pool of 256M), a request the scheduler can place on a small node,
// and no CPU limit, whose throttling would only add latency to a server that has room.
var defaultResources = corev1.ResourceRequirements{
	Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
	Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")},
}

// Resources are the database container's resources: spec.resources as given, or the
// defaults.
func Resources(db *v1beta1.DatabaseCluster) corev1.ResourceRequirements {
	if db.Spec.Resources != nil {
		return *db.Spec.Resources.DeepCopy()
	}
	return *defaultResources.DeepCopy()
}

// memoryLimitArgs passes the container's memory limit to the instance manager, which
// derives the server's memory settings from it; none without a limit. A flag rather
// than the downward API's limits.memory, which reports the node's memory when the
// container has no limit.
func memoryLimitArgs(r corev1.ResourceRequirements) []string {
	lim, ok := r.Limits[corev1.ResourceMemory]
	if !ok || lim.Sign() <= 0 {
		return nil
	}
	return []string{"--memory-limit=" + strconv.FormatInt(lim.Value(), 10)}
}
