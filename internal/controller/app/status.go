package app

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/internal/controller/rollout"
	"github.com/mooringhq/mooring/internal/engine"
)

// deriveStatus sets the App's status from its Deployment; how a rollout reads as a phase
// and conditions is shared with every Deployment-backed kind (package rollout).
func deriveStatus(app *mooringv1.App, d *appsv1.Deployment, pods []corev1.Pod) {
	r := rollout.Evaluate(rollout.Observe(ptr.Deref(app.Spec.Replicas, 1), d).WithPods(pods))
	app.Status.Replicas = d.Status.Replicas
	app.Status.AvailableReplicas = d.Status.AvailableReplicas
	app.Status.Selector = labels.SelectorFromSet(engine.SelectorLabels(Component, app.Name)).String()
	app.Status.Phase = mooringv1.AppPhase(r.Phase)
	r.SetConditions(app)
}
