package app

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
)

// The rollout decisions are tested in package rollout; this checks how the App carries
// them: its phase enum, counts, selector and conditions.
func TestDeriveStatus(t *testing.T) {
	deployment := func(gen, observed int64, replicas, available int32) *appsv1.Deployment {
		return &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Generation: gen},
			Status: appsv1.DeploymentStatus{ObservedGeneration: observed, Replicas: replicas, UpdatedReplicas: replicas,
				AvailableReplicas: available, UnavailableReplicas: replicas - available},
		}
	}
	tests := map[string]struct {
		d                          *appsv1.Deployment
		phase                      mooringv1.AppPhase
		ready, progressing, reason string
	}{
		"not yet observed":  {d: deployment(1, 0, 0, 0), phase: mooringv1.AppPending, ready: "False", progressing: "True", reason: mooringv1.ReasonDeploymentPending},
		"no pods available": {d: deployment(1, 1, 2, 0), phase: mooringv1.AppPending, ready: "False", progressing: "True", reason: mooringv1.ReasonRollingOut},
		"partly available":  {d: deployment(1, 1, 2, 1), phase: mooringv1.AppNotReady, ready: "False", progressing: "True", reason: mooringv1.ReasonRollingOut},
		"complete":          {d: deployment(1, 1, 2, 2), phase: mooringv1.AppRunning, ready: "True", progressing: "False", reason: mooringv1.ReasonRolloutComplete},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			app := newApp(nil) // wants 2 replicas
			deriveStatus(app, tt.d, nil, nil)
			if app.Status.Phase != tt.phase {
				t.Errorf("phase = %s, want %s", app.Status.Phase, tt.phase)
			}
			if app.Status.Replicas != tt.d.Status.Replicas || app.Status.AvailableReplicas != tt.d.Status.AvailableReplicas {
				t.Errorf("replicas %d available %d, want the Deployment's %d and %d", app.Status.Replicas,
					app.Status.AvailableReplicas, tt.d.Status.Replicas, tt.d.Status.AvailableReplicas)
			}
			ready := meta.FindStatusCondition(app.Status.Conditions, mooringv1.ConditionReady)
			prog := meta.FindStatusCondition(app.Status.Conditions, mooringv1.ConditionProgressing)
			if ready == nil || string(ready.Status) != tt.ready {
				t.Errorf("Ready = %+v, want %s", ready, tt.ready)
			}
			if prog == nil || string(prog.Status) != tt.progressing || prog.Reason != tt.reason {
				t.Errorf("Progressing = %+v, want %s/%s", prog, tt.progressing, tt.reason)
			}
			if want := "app.kubernetes.io/component=app,app.kubernetes.io/instance=web,app.kubernetes.io/name=web"; app.Status.Selector != want {
				t.Errorf("selector = %q, want %q", app.Status.Selector, want)
			}
		})
	}
}

// status.desiredReplicas (the REPLICAS column) is what the App wants now: its spec, or
// while autoscaled the autoscaler's count, which spec.replicas no longer is.
func TestDesiredReplicas(t *testing.T) {
	autoscaled := func(minReplicas *int32, maxReplicas int32) func(*mooringv1.App) {
		return func(a *mooringv1.App) {
			a.Spec.Autoscaling = &mooringv1.AppAutoscaling{MinReplicas: minReplicas, MaxReplicas: maxReplicas}
		}
	}
	deployment := func(replicas *int32) *appsv1.Deployment {
		return &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: replicas}}
	}
	hpa := func(desired int32) *autoscalingv2.HorizontalPodAutoscaler {
		return &autoscalingv2.HorizontalPodAutoscaler{Status: autoscalingv2.HorizontalPodAutoscalerStatus{DesiredReplicas: desired}}
	}
	tests := map[string]struct {
		app  *mooringv1.App
		d    *appsv1.Deployment
		hpa  *autoscalingv2.HorizontalPodAutoscaler
		want int32
	}{
		"spec default":                     {app: newApp(func(a *mooringv1.App) { a.Spec.Replicas = nil }), d: deployment(ptr.To[int32](1)), want: 1},
		"explicit spec":                    {app: newApp(nil), d: deployment(ptr.To[int32](2)), want: 2},
		"explicit spec, no Deployment yet": {app: newApp(func(a *mooringv1.App) { a.Spec.Replicas = ptr.To[int32](4) }), want: 4},
		"HPA with status": {app: newApp(autoscaled(ptr.To[int32](2), 5)), d: deployment(ptr.To[int32](3)),
			hpa: hpa(4), want: 4},
		"HPA with status, spec.replicas is ignored": {app: newApp(autoscaled(nil, 10)), d: deployment(ptr.To[int32](7)),
			hpa: hpa(7), want: 7},
		"HPA without status: the Deployment's count within the bounds": {app: newApp(autoscaled(ptr.To[int32](1), 5)),
			d: deployment(ptr.To[int32](3)), hpa: hpa(0), want: 3},
		"HPA without status, fresh Deployment below minReplicas": {app: newApp(autoscaled(ptr.To[int32](2), 5)),
			d: deployment(ptr.To[int32](1)), hpa: hpa(0), want: 2},
		"HPA without status, Deployment above maxReplicas": {app: newApp(autoscaled(nil, 3)),
			d: deployment(ptr.To[int32](6)), hpa: hpa(0), want: 3},
		"HPA without status, minReplicas defaults to 1": {app: newApp(autoscaled(nil, 5)),
			d: deployment(ptr.To[int32](1)), hpa: hpa(0), want: 1},
		"no HPA or Deployment yet: minReplicas": {app: newApp(autoscaled(ptr.To[int32](3), 5)), want: 3},
		"HPA count outside bounds changed since": {app: newApp(autoscaled(ptr.To[int32](1), 4)),
			d: deployment(ptr.To[int32](5)), hpa: hpa(5), want: 4},
		"Deployment scaled to zero by hand: scaling disabled": {app: newApp(autoscaled(ptr.To[int32](2), 5)),
			d: deployment(ptr.To[int32](0)), hpa: hpa(0), want: 0},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if got := desiredReplicas(tt.app, tt.d, tt.hpa); got != tt.want {
				t.Errorf("desiredReplicas = %d, want %d", got, tt.want)
			}
			if tt.d == nil {
				return
			}
			// deriveStatus carries it into the status.
			tt.app.Status = mooringv1.AppStatus{}
			deriveStatus(tt.app, tt.d, tt.hpa, nil)
			if tt.app.Status.DesiredReplicas != tt.want {
				t.Errorf("status.desiredReplicas = %d, want %d", tt.app.Status.DesiredReplicas, tt.want)
			}
		})
	}
}

// An App waiting for a reference before its Deployment exists still shows what it wants.
func TestDeriveWaitingStatusDesiredReplicas(t *testing.T) {
	app := newApp(func(a *mooringv1.App) { a.Spec.Replicas = ptr.To[int32](3) })
	deriveWaitingStatus(app, nil, nil)
	if app.Status.DesiredReplicas != 3 || app.Status.Phase != mooringv1.AppPending {
		t.Errorf("desiredReplicas %d phase %s, want 3 and Pending", app.Status.DesiredReplicas, app.Status.Phase)
	}
}

// An autoscaled App whose Deployment still runs one pod (the HPA has not made its first
// pass) is not Running below the autoscaler's minimum of 2: the phase measures the pods
// against status.desiredReplicas, the count kubectl shows.
func TestAutoscaledAppIsNotRunningBelowItsMinimum(t *testing.T) {
	app := newApp(func(a *mooringv1.App) {
		a.Spec.Replicas = nil
		a.Spec.Autoscaling = &mooringv1.AppAutoscaling{MinReplicas: ptr.To[int32](2), MaxReplicas: 5}
	})
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Generation: 1},
		Spec:       appsv1.DeploymentSpec{Replicas: ptr.To[int32](1)},
		Status:     appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 1, UpdatedReplicas: 1, AvailableReplicas: 1},
	}
	deriveStatus(app, d, nil, nil)
	if app.Status.DesiredReplicas != 2 || app.Status.Phase == mooringv1.AppRunning {
		t.Fatalf("desired %d phase %s, want desired 2 and not Running with 1 pod available", app.Status.DesiredReplicas, app.Status.Phase)
	}
	// The HPA scales to its minimum and both pods become available: Running.
	d.Spec.Replicas = ptr.To[int32](2)
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 2, UpdatedReplicas: 2, AvailableReplicas: 2}
	deriveStatus(app, d, nil, nil)
	if app.Status.Phase != mooringv1.AppRunning {
		t.Fatalf("phase %s with 2 of 2 available, want Running", app.Status.Phase)
	}
}

// The Autoscaling condition carries what the HorizontalPodAutoscaler says of its ability
// to scale: an HPA without the CPU request its utilization target needs keeps its count
// while the pods run, and only this condition says so.
func TestAutoscalingCondition(t *testing.T) {
	hpa := func(conds ...autoscalingv2.HorizontalPodAutoscalerCondition) *autoscalingv2.HorizontalPodAutoscaler {
		return &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "web"},
			Status: autoscalingv2.HorizontalPodAutoscalerStatus{Conditions: conds}}
	}
	cond := func(t autoscalingv2.HorizontalPodAutoscalerConditionType, s corev1.ConditionStatus, reason, msg string) autoscalingv2.HorizontalPodAutoscalerCondition {
		return autoscalingv2.HorizontalPodAutoscalerCondition{Type: t, Status: s, Reason: reason, Message: msg}
	}
	ableToScale := cond(autoscalingv2.AbleToScale, corev1.ConditionTrue, "SucceededGetScale", "the HPA controller was able to get the target's current scale")
	noRequest := cond(autoscalingv2.ScalingActive, corev1.ConditionFalse, "FailedGetResourceMetric",
		"the HPA was unable to compute the replica count: failed to get cpu utilization: missing request for cpu in container app of Pod web-1")
	tests := map[string]struct {
		hpa             *autoscalingv2.HorizontalPodAutoscaler
		status          metav1.ConditionStatus
		reason, message string
	}{
		"no HPA yet":           {hpa: nil, status: metav1.ConditionUnknown, reason: mooringv1.ReasonAutoscalerPending},
		"HPA not reported yet": {hpa: hpa(), status: metav1.ConditionUnknown, reason: mooringv1.ReasonAutoscalerPending},
		"no CPU request": {hpa: hpa(ableToScale, noRequest), status: metav1.ConditionFalse, reason: "FailedGetResourceMetric",
			message: "ScalingActive=False: the HPA was unable to compute the replica count: failed to get cpu utilization: missing request for cpu"},
		"no CPU request, another pod named": {hpa: hpa(ableToScale, cond(autoscalingv2.ScalingActive, corev1.ConditionFalse, "FailedGetResourceMetric",
			"the HPA was unable to compute the replica count: failed to get cpu utilization: missing request for cpu in container app of Pod web-7")),
			status: metav1.ConditionFalse, reason: "FailedGetResourceMetric",
			message: "HorizontalPodAutoscaler web: ScalingActive=False: the HPA was unable to compute the replica count: failed to get cpu utilization: missing request for cpu in container app"},
		"cannot get the scale": {hpa: hpa(cond(autoscalingv2.AbleToScale, corev1.ConditionFalse, "FailedGetScale", "deployments.apps \"web\" not found")),
			status: metav1.ConditionFalse, reason: "FailedGetScale", message: "AbleToScale=False"},
		"reason not a condition reason": {hpa: hpa(ableToScale, cond(autoscalingv2.ScalingActive, corev1.ConditionFalse, "not valid!", "x")),
			status: metav1.ConditionFalse, reason: mooringv1.ReasonAutoscalerCannotScale},
		"scaling": {hpa: hpa(ableToScale, cond(autoscalingv2.ScalingActive, corev1.ConditionTrue, "ValidMetricFound", "ok")),
			status: metav1.ConditionTrue, reason: mooringv1.ReasonAutoscalerActive},
	}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Generation: 1},
		Spec:       appsv1.DeploymentSpec{Replicas: ptr.To[int32](2)},
		Status:     appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 2, UpdatedReplicas: 2, AvailableReplicas: 2},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			app := newApp(func(a *mooringv1.App) {
				a.Spec.Replicas = nil
				a.Spec.Autoscaling = &mooringv1.AppAutoscaling{MaxReplicas: 5}
			})
			deriveStatus(app, d, tt.hpa, nil)
			c := meta.FindStatusCondition(app.Status.Conditions, mooringv1.ConditionAutoscaling)
			if c == nil || c.Status != tt.status || c.Reason != tt.reason || !strings.Contains(c.Message, tt.message) {
				t.Fatalf("Autoscaling %+v, want %s/%s with a message containing %q", c, tt.status, tt.reason, tt.message)
			}
			// The pod an HPA message names changes from sync to sync: copied, it would
			// rewrite the App's status for the same problem.
			if strings.Contains(c.Message, "of Pod") {
				t.Errorf("Autoscaling message %q names a pod", c.Message)
			}
			if app.Status.Phase != mooringv1.AppRunning {
				t.Errorf("phase %s, want Running: the pods run whatever the autoscaler says", app.Status.Phase)
			}
		})
	}
	// Without spec.autoscaling the condition goes.
	app := newApp(nil)
	app.Status.Conditions = []metav1.Condition{{Type: mooringv1.ConditionAutoscaling, Status: metav1.ConditionFalse, Reason: "FailedGetResourceMetric"}}
	deriveStatus(app, d, nil, nil)
	if c := meta.FindStatusCondition(app.Status.Conditions, mooringv1.ConditionAutoscaling); c != nil {
		t.Errorf("Autoscaling %+v without spec.autoscaling, want none", c)
	}
}
