package database

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mooringhq/mooring/api/v1beta1"
	"github.com/mooringhq/mooring/internal/engine"
)

// The read-only Service selects the replicas by a label Mooring puts on each pod.
// +kubebuilder:rbac:groups="",resources=pods,verbs=patch

// ReadOnlyServiceName is the Service of the replicas, for reads that may lag.
func ReadOnlyServiceName(db *v1beta1.DatabaseCluster) string { return db.Name + "-ro" }

// ReadOnlyService selects the ready replicas: reads that may lag behind the primary by
// the replication lag status.instances reports. With no replica it has no endpoints.
func ReadOnlyService(db *v1beta1.DatabaseCluster) *corev1.Service {
	selector := engine.SelectorLabels(Component, db.Name)
	selector[v1beta1.RoleLabel] = string(v1beta1.RoleReplica)
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: ReadOnlyServiceName(db), Labels: engine.Labels(Component, db.Name)},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: selector,
			Ports:    []corev1.ServicePort{servicePort(db)},
		},
	}
}

// podRole is the role a pod has by its index: pod 0 is the primary.
func podRole(db *v1beta1.DatabaseCluster, p *corev1.Pod) v1beta1.InstanceRole {
	if p.Name == PrimaryPodName(db) {
		return v1beta1.RolePrimary
	}
	return v1beta1.RoleReplica
}

// labelRoles puts v1beta1.RoleLabel on each pod that lacks it or has another: one patch per
// pod in its life, none on a resync.
func labelRoles(ctx context.Context, s *engine.Scope[*v1beta1.DatabaseCluster], pods []corev1.Pod) error {
	for i := range pods {
		p := &pods[i]
		role := string(podRole(s.Object, p))
		if p.Labels[v1beta1.RoleLabel] == role {
			continue
		}
		patch := []byte(fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, v1beta1.RoleLabel, role))
		// Silent: status.instances shows the roles; an event per pod would say nothing more.
		if err := s.Patch(ctx, p, client.RawPatch(types.StrategicMergePatchType, patch), engine.Silent()); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("label pod %s: %w", p.Name, err)
		}
	}
	return nil
}
