package cache

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/internal/controller/rollout"
	"github.com/mooringhq/mooring/internal/engine"
)

// deriveStatus sets the CacheInstance's status from its Deployment; a rollout reads the
// same for every Deployment-backed kind (package rollout).
func deriveStatus(c *mooringv1.CacheInstance, d *appsv1.Deployment, pods []corev1.Pod) {
	r := rollout.Evaluate(rollout.Observe(replicas(c), d).WithPods(pods))
	c.Status.Replicas = d.Status.Replicas
	c.Status.AvailableReplicas = d.Status.AvailableReplicas
	c.Status.Selector = labels.SelectorFromSet(engine.SelectorLabels(Component, c.Name)).String()
	c.Status.Endpoint = Endpoint(c)
	c.Status.Binding = &mooringv1.ServiceBindingStatus{Name: BindingConfigMapName(c)}
	c.Status.Phase = mooringv1.CacheInstancePhase(r.Phase)
	r.SetConditions(c)
}
