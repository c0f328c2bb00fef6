package app

import (
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/internal/controller/rollout"
	"github.com/mooringhq/mooring/internal/engine"
)

// deriveStatus sets the App's status from its Deployment and, while spec.autoscaling is
// set, its HorizontalPodAutoscaler (nil when there is none); how a rollout reads as a
// phase and conditions is shared with every Deployment-backed kind (package rollout).
func deriveStatus(app *mooringv1.App, d *appsv1.Deployment, hpa *autoscalingv2.HorizontalPodAutoscaler, pods []corev1.Pod) {
	// The phase measures the pods against the count the REPLICAS column shows, so an
	// autoscaled App is not Running below its autoscaler's minimum.
	app.Status.DesiredReplicas = desiredReplicas(app, d, hpa)
	r := rollout.Evaluate(rollout.Observe(app.Status.DesiredReplicas, d).WithPods(pods))
	app.Status.Replicas = d.Status.Replicas
	app.Status.AvailableReplicas = d.Status.AvailableReplicas
	app.Status.Selector = labels.SelectorFromSet(engine.SelectorLabels(Component, app.Name)).String()
	app.Status.Phase = mooringv1.AppPhase(r.Phase)
	r.SetConditions(app)
}

// desiredReplicas is status.desiredReplicas, the number of pods the App wants now. Without
// spec.autoscaling that is spec.replicas. With it, the autoscaler's count: the HPA's
// status.desiredReplicas once it has computed one. Before that, and while it cannot (an
// HPA that never got metrics reports 0), the count it keeps, which is what it scales to
// first: the Deployment's replicas (1, the default, for one not yet made) moved into
// [minReplicas, maxReplicas]. d and hpa are the live children, nil when missing.
func desiredReplicas(app *mooringv1.App, d *appsv1.Deployment, hpa *autoscalingv2.HorizontalPodAutoscaler) int32 {
	as := app.Spec.Autoscaling
	if as == nil {
		return ptr.Deref(app.Spec.Replicas, 1)
	}
	want := int32(1)
	switch {
	case hpa != nil && hpa.Status.DesiredReplicas > 0:
		want = hpa.Status.DesiredReplicas
	case d != nil && d.Spec.Replicas != nil:
		if *d.Spec.Replicas == 0 {
			// The HPA leaves a Deployment scaled to zero by hand alone (ScalingDisabled).
			return 0
		}
		want = *d.Spec.Replicas
	}
	// A count the HPA reported before spec.autoscaling changed its bounds is moved into
	// them too: the HPA does so on its next pass.
	return min(max(want, ptr.Deref(as.MinReplicas, 1)), as.MaxReplicas)
}

// deriveWaitingStatus is the status of an App that waits for what it references: what
// runs already (d and hpa, nil when missing) is reported as usual, but Ready says what the
// App waits for (EnvFromReady and BindingsReady have the details).
func deriveWaitingStatus(app *mooringv1.App, d *appsv1.Deployment, hpa *autoscalingv2.HorizontalPodAutoscaler) {
	if d != nil {
		deriveStatus(app, d, hpa, nil)
	} else {
		app.Status.Phase = mooringv1.AppPending
		app.Status.DesiredReplicas = desiredReplicas(app, nil, hpa)
		app.Status.Selector = labels.SelectorFromSet(engine.SelectorLabels(Component, app.Name)).String()
	}
	engine.SetCondition(app, engine.ConditionReady, metav1.ConditionFalse, ReasonWaiting,
		"Waiting for referenced objects; the EnvFromReady and BindingsReady conditions say which.")
}
