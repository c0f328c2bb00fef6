package app

import (
	"fmt"
	"regexp"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/internal/controller/rollout"
	"github.com/mooringhq/mooring/internal/engine"
)

// hpaPodName matches the pod an HPA message names ("missing request for cpu in container
// app of Pod web-1"). The HPA names whichever pod it looked at first, which changes with
// every rollout and between its syncs; copied into the App's condition it would rewrite
// the App's status each time for the same problem.
var hpaPodName = regexp.MustCompile(` of Pod [^\s:;,]+`)

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
	setAutoscaling(app, hpa)
}

// conditionReason is what a metav1.Condition's reason must match.
var conditionReason = regexp.MustCompile(`^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`)

// validReason is reason, another controller's, when it is a valid condition reason, and
// fallback otherwise: one invalid reason would fail the whole status write.
func validReason(reason, fallback string) string {
	if len(reason) > 1024 || !conditionReason.MatchString(reason) {
		return fallback
	}
	return reason
}

// maxAutoscalingMessage bounds the HPA's message carried into the App's condition; the
// HPA's own are short, this only keeps a pathological one from failing the status write.
const maxAutoscalingMessage = 1024

// setAutoscaling sets the Autoscaling condition from the HorizontalPodAutoscaler hpa (nil
// when there is none yet) while spec.autoscaling is set. An HPA that cannot compute its
// metrics (no resources.requests for a utilization target) keeps the replica count it
// has: the App looks Running, and only this condition says it will not scale.
func setAutoscaling(app *mooringv1.App, hpa *autoscalingv2.HorizontalPodAutoscaler) {
	if app.Spec.Autoscaling == nil {
		meta.RemoveStatusCondition(app.StatusConditions(), mooringv1.ConditionAutoscaling)
		return
	}
	pending := func() {
		engine.SetCondition(app, mooringv1.ConditionAutoscaling, metav1.ConditionUnknown, mooringv1.ReasonAutoscalerPending,
			fmt.Sprintf("HorizontalPodAutoscaler %s has not reported whether it can scale yet.", app.Name))
	}
	if hpa == nil {
		pending()
		return
	}
	active := 0
	for _, t := range []autoscalingv2.HorizontalPodAutoscalerConditionType{autoscalingv2.AbleToScale, autoscalingv2.ScalingActive} {
		c := hpaCondition(hpa, t)
		switch {
		case c == nil:
		case c.Status == corev1.ConditionFalse:
			reason := validReason(c.Reason, mooringv1.ReasonAutoscalerCannotScale)
			msg := fmt.Sprintf("HorizontalPodAutoscaler %s: %s=False: %s", hpa.Name, t, hpaPodName.ReplaceAllString(c.Message, ""))
			if len(msg) > maxAutoscalingMessage {
				msg = strings.ToValidUTF8(msg[:maxAutoscalingMessage], "")
			}
			engine.SetCondition(app, mooringv1.ConditionAutoscaling, metav1.ConditionFalse, reason, msg)
			return
		case c.Status == corev1.ConditionTrue:
			active++
		}
	}
	if active < 2 {
		pending()
		return
	}
	engine.SetCondition(app, mooringv1.ConditionAutoscaling, metav1.ConditionTrue, mooringv1.ReasonAutoscalerActive,
		fmt.Sprintf("HorizontalPodAutoscaler %s is able to scale and computes the replica count from its metrics.", hpa.Name))
}

func hpaCondition(hpa *autoscalingv2.HorizontalPodAutoscaler, t autoscalingv2.HorizontalPodAutoscalerConditionType) *autoscalingv2.HorizontalPodAutoscalerCondition {
	for i := range hpa.Status.Conditions {
		if hpa.Status.Conditions[i].Type == t {
			return &hpa.Status.Conditions[i]
		}
	}
	return nil
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
		setAutoscaling(app, hpa)
	}
	engine.SetCondition(app, mooringv1.ConditionReady, metav1.ConditionFalse, mooringv1.ReasonWaiting,
		"Waiting for referenced objects; the EnvFromReady and BindingsReady conditions say which.")
}
