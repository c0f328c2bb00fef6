package database_test

import (
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mooringhq/mooring/api/v1beta1"
	"github.com/mooringhq/mooring/internal/controller/database"
	"github.com/mooringhq/mooring/internal/instance"
	"github.com/mooringhq/mooring/internal/testutil"
)

// TestClusterRecordsItHasData: once the primary's pod has been ready, status.initialized
// is set and the state ConfigMap the pods mount says so; until then it says false (a new
// cluster's first start initialises). envtest runs no StatefulSet controller or kubelet:
// the test makes pod 0 and its readiness, and the StatefulSet's status that follows.
func TestClusterRecordsItHasData(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	db := createDB(t, ns, "orders", v1beta1.PostgreSQL, func(d *v1beta1.DatabaseCluster) { d.Spec.ReplicaCount = 1 })
	key := client.ObjectKeyFromObject(db)
	stateKey := client.ObjectKey{Namespace: ns, Name: "orders-state"}
	testutil.WaitFor(t, env.Client, stateKey, &corev1.ConfigMap{}, "state ConfigMap of a new cluster", func(cm *corev1.ConfigMap) error {
		if cm.Data[instance.ClusterInitializedKey] != "false" {
			return fmt.Errorf("data %v, want initialized false", cm.Data)
		}
		return nil
	})
	sts := &appsv1.StatefulSet{}
	testutil.WaitFor(t, env.Client, key, sts, "StatefulSet", func(s *appsv1.StatefulSet) error {
		for _, v := range s.Spec.Template.Spec.Volumes {
			if v.ConfigMap != nil && v.ConfigMap.Name == "orders-state" {
				return nil
			}
		}
		return fmt.Errorf("volumes %v lack the state ConfigMap", s.Spec.Template.Spec.Volumes)
	})

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: database.PrimaryPodName(db), Namespace: ns, Labels: sts.Spec.Template.Labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "database", Image: "postgres:18"}}},
	}
	if err := env.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	if err := env.Client.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	sts.Status = appsv1.StatefulSetStatus{ObservedGeneration: sts.Generation, Replicas: 1, ReadyReplicas: 1, UpdatedReplicas: 1, AvailableReplicas: 1}
	if err := env.Client.Status().Update(ctx, sts); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, env.Client, key, &v1beta1.DatabaseCluster{}, "status.initialized", func(d *v1beta1.DatabaseCluster) error {
		if !d.Status.Initialized {
			return fmt.Errorf("initialized false, phase %s", d.Status.Phase)
		}
		return nil
	})
	testutil.WaitFor(t, env.Client, stateKey, &corev1.ConfigMap{}, "state ConfigMap saying the cluster has data", func(cm *corev1.ConfigMap) error {
		if cm.Data[instance.ClusterInitializedKey] != "true" {
			return fmt.Errorf("data %v, want initialized true", cm.Data)
		}
		return nil
	})
}
