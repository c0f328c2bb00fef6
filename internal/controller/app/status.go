package app

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/internal/controller/rollout"
	"github.com/mooringhq/mooring/internal/engine"
)

// deriveStatus sets the App's status from its Deployment; how a rollout reads as a phase
// and conditions is shared with every Deployment-backed kind (package rollout).
func deriveStatus(app *mooringv1.App, d *appsv1.Deployment, pods []corev1.Pod) {
	r := rollout.Evaluate(rollout.Observe(wantedReplicas(app, d), d).WithPods(pods))
	app.Status.Replicas = d.Status.Replicas
	app.Status.AvailableReplicas = d.Status.AvailableReplicas
	app.Status.Selector = labels.SelectorFromSet(engine.SelectorLabels(Component, app.Name)).String()
	app.Status.Phase = mooringv1.AppPhase(r.Phase)
	r.SetConditions(app)
}

// wantedReplicas is spec.replicas, or while an autoscaler owns the count, the count it
// set on the Deployment.
func wantedReplicas(app *mooringv1.App, d *appsv1.Deployment) int32 {
	if app.Spec.Autoscaling != nil && d.Spec.Replicas != nil {
		return *d.Spec.Replicas
	}
	return ptr.Deref(app.Spec.Replicas, 1)
}

// deriveWaitingStatus is the status of an App that waits for what it references: what
// runs already (d, nil when nothing does) is reported as usual, but Ready says what the
// App waits for (EnvFromReady and BindingsReady have the details).
func deriveWaitingStatus(app *mooringv1.App, d *appsv1.Deployment) {
	if d != nil {
		deriveStatus(app, d, nil)
	} else {
		app.Status.Phase = mooringv1.AppPending
		app.Status.Selector = labels.SelectorFromSet(engine.SelectorLabels(Component, app.Name)).String()
	}
	engine.SetCondition(app, engine.ConditionReady, metav1.ConditionFalse, ReasonWaiting,
		"Waiting for referenced objects; the EnvFromReady and BindingsReady conditions say which.")
}
