package app

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/internal/engine"
)

func TestDeriveStatus(t *testing.T) {
	deployment := func(gen, observed int64, replicas, updated, available int32, conds ...appsv1.DeploymentCondition) *appsv1.Deployment {
		return &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Generation: gen},
			Status: appsv1.DeploymentStatus{ObservedGeneration: observed, Replicas: replicas, UpdatedReplicas: updated,
				AvailableReplicas: available, UnavailableReplicas: replicas - available, Conditions: conds},
		}
	}
	tests := map[string]struct {
		d                          *appsv1.Deployment
		phase                      mooringv1.AppPhase
		ready, progressing, reason string
	}{
		"not yet observed":  {d: deployment(1, 0, 0, 0, 0), phase: mooringv1.AppPending, ready: "False", progressing: "True", reason: ReasonDeploymentPending},
		"no pods available": {d: deployment(1, 1, 2, 2, 0), phase: mooringv1.AppPending, ready: "False", progressing: "True", reason: ReasonRollingOut},
		"partly available":  {d: deployment(1, 1, 2, 2, 1), phase: mooringv1.AppNotReady, ready: "False", progressing: "True", reason: ReasonRollingOut},
		"complete":          {d: deployment(1, 1, 2, 2, 2), phase: mooringv1.AppRunning, ready: "True", progressing: "False", reason: ReasonRolloutComplete},
		"old replica set still around": {
			d: deployment(2, 2, 3, 2, 2), phase: mooringv1.AppNotReady, ready: "False", progressing: "True", reason: ReasonRollingOut,
		},
		"deadline exceeded": {
			d:     deployment(1, 1, 2, 1, 1, appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded"}),
			phase: mooringv1.AppNotReady, ready: "False", progressing: "False", reason: ReasonProgressDeadlineExceed,
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			app := newApp(nil) // wants 2 replicas
			deriveStatus(app, tt.d)
			if app.Status.Phase != tt.phase {
				t.Errorf("phase = %s, want %s", app.Status.Phase, tt.phase)
			}
			ready := meta.FindStatusCondition(app.Status.Conditions, engine.ConditionReady)
			prog := meta.FindStatusCondition(app.Status.Conditions, engine.ConditionProgressing)
			if ready == nil || string(ready.Status) != tt.ready {
				t.Errorf("Ready = %+v, want %s", ready, tt.ready)
			}
			if prog == nil || string(prog.Status) != tt.progressing || prog.Reason != tt.reason {
				t.Errorf("Progressing = %+v, want %s/%s", prog, tt.progressing, tt.reason)
			}
			if app.Status.Selector == "" {
				t.Error("selector not set")
			}
		})
	}
}
