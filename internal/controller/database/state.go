package database

import (
	"context"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mooringhq/mooring/api/v1beta1"
	"github.com/mooringhq/mooring/internal/engine"
	"github.com/mooringhq/mooring/internal/instance"
)

// A cluster records that it has data in two places: status.initialized, for people and
// tools, and the ConfigMap <name>-state, which every database pod mounts, for the
// instance managers (which do not talk to the API server). A pod's own volume cannot
// say it, since the volume is what gets lost. An instance that finds its volume empty in
// a cluster with data copies the primary; the primary itself waits, not ready, with the
// fault PrimaryDataLost (internal/instance, marker.go).

// ReasonCloning is an instance's reason while it copies the primary onto an empty volume
// of a cluster with data: InstancesHealthy is False with it, and a Warning event says so.
const ReasonCloning = "Cloning"

const stateVolume = "cluster-state"

// StateConfigMapName names the cluster's state ConfigMap.
func StateConfigMapName(db *v1beta1.DatabaseCluster) string { return db.Name + "-state" }

// StateConfigMap is the cluster's state as the instance managers read it.
func StateConfigMap(db *v1beta1.DatabaseCluster) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: StateConfigMapName(db), Labels: engine.Labels(Component, db.Name)},
		Data:       map[string]string{instance.ClusterInitializedKey: strconv.FormatBool(db.Status.Initialized)},
	}
}

// stateVolumeSource mounts the state ConfigMap. Optional: a pod that starts before it
// exists is a pod of a new cluster, which has no data yet.
func stateVolumeSource(db *v1beta1.DatabaseCluster) corev1.Volume {
	return corev1.Volume{Name: stateVolume, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: StateConfigMapName(db)}, Optional: ptr.To(true),
	}}}
}

// markInitialized sets status.initialized once the primary's pod has been ready: its
// readiness means the manager initialised the data directory and set up the users. It
// is read from the cache, before the children are applied, so the state ConfigMap
// follows in the same reconcile. It is never unset.
func markInitialized(ctx context.Context, s *engine.Scope[*v1beta1.DatabaseCluster]) error {
	db := s.Object
	if db.Status.Initialized {
		return nil
	}
	pod := &corev1.Pod{}
	err := s.Client.Get(ctx, client.ObjectKey{Namespace: db.Namespace, Name: PrimaryPodName(db)}, pod)
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return err
	}
	if podReady(pod) {
		db.Status.Initialized = true
	}
	return nil
}

// cloningMessage is status.instances[].message of an instance copying the primary.
func cloningMessage(a *instance.Status) string {
	msg := ReasonCloning + ": the data volume was empty and the cluster has data, so the instance copies the primary " +
		"instead of initialising an empty database; it is not ready until the copy is complete."
	if a.Error != "" {
		msg += " Last error: " + a.Error
	}
	return msg
}
