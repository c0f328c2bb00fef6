package app

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/internal/engine"
)

// rollout is what the Deployment says about the App's pods.
type rollout struct {
	want, replicas, updated, available, unavailable int32
	observed                                        bool // the Deployment controller has seen the latest spec
	deadlineExceeded                                bool
}

func observe(app *mooringv1.App, d *appsv1.Deployment) rollout {
	r := rollout{
		want:        ptr.Deref(app.Spec.Replicas, 1),
		replicas:    d.Status.Replicas,
		updated:     d.Status.UpdatedReplicas,
		available:   d.Status.AvailableReplicas,
		unavailable: d.Status.UnavailableReplicas,
		observed:    d.Status.ObservedGeneration >= d.Generation,
	}
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentProgressing && c.Status == corev1.ConditionFalse && c.Reason == "ProgressDeadlineExceeded" {
			r.deadlineExceeded = true
		}
	}
	return r
}

// complete is the same test `kubectl rollout status` makes.
func (r rollout) complete() bool {
	return r.observed && r.updated == r.want && r.replicas == r.want && r.available == r.want && r.unavailable == 0
}

// progressChecks decide the Progressing condition; the first that matches wins.
var progressChecks = []func(r rollout) (status metav1.ConditionStatus, reason, message string, ok bool){
	func(r rollout) (metav1.ConditionStatus, string, string, bool) {
		return metav1.ConditionTrue, ReasonDeploymentPending,
			"Waiting for the Deployment controller to observe the latest spec.", !r.observed
	},
	func(r rollout) (metav1.ConditionStatus, string, string, bool) {
		return metav1.ConditionFalse, ReasonProgressDeadlineExceed,
			"The rollout made no progress within its deadline; check the pods' events (kubectl describe pods) for image pull or scheduling errors.",
			r.deadlineExceeded
	},
	func(r rollout) (metav1.ConditionStatus, string, string, bool) {
		return metav1.ConditionFalse, ReasonRolloutComplete,
			fmt.Sprintf("Rollout complete: %d of %d replicas updated and available.", r.available, r.want), r.complete()
	},
	func(r rollout) (metav1.ConditionStatus, string, string, bool) {
		return metav1.ConditionTrue, ReasonRollingOut,
			fmt.Sprintf("Rolling out: %d of %d replicas updated, %d available.", r.updated, r.want, r.available), true
	},
}

// deriveStatus sets the App's status from its Deployment.
func deriveStatus(app *mooringv1.App, d *appsv1.Deployment) {
	r := observe(app, d)
	app.Status.Replicas = d.Status.Replicas
	app.Status.AvailableReplicas = d.Status.AvailableReplicas
	app.Status.Selector = labels.SelectorFromSet(engine.SelectorLabels(Component, app.Name)).String()

	for _, check := range progressChecks {
		if status, reason, msg, ok := check(r); ok {
			engine.SetCondition(app, engine.ConditionProgressing, status, reason, msg)
			break
		}
	}
	switch {
	case r.complete():
		app.Status.Phase = mooringv1.AppRunning
		engine.SetCondition(app, engine.ConditionReady, metav1.ConditionTrue, ReasonAllReplicasAvailable,
			fmt.Sprintf("%d of %d replicas available.", r.available, r.want))
	case r.available == 0:
		app.Status.Phase = mooringv1.AppPending
		engine.SetCondition(app, engine.ConditionReady, metav1.ConditionFalse, ReasonReplicasUnavailable,
			fmt.Sprintf("No replica available yet (0 of %d); the Progressing condition says why.", r.want))
	default:
		app.Status.Phase = mooringv1.AppNotReady
		engine.SetCondition(app, engine.ConditionReady, metav1.ConditionFalse, ReasonReplicasUnavailable,
			fmt.Sprintf("%d of %d replicas available.", r.available, r.want))
	}
}
