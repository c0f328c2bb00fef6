package app

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/internal/controller/rollout"
	"github.com/mooringhq/mooring/internal/engine"
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
		"not yet observed":  {d: deployment(1, 0, 0, 0), phase: mooringv1.AppPending, ready: "False", progressing: "True", reason: rollout.ReasonDeploymentPending},
		"no pods available": {d: deployment(1, 1, 2, 0), phase: mooringv1.AppPending, ready: "False", progressing: "True", reason: rollout.ReasonRollingOut},
		"partly available":  {d: deployment(1, 1, 2, 1), phase: mooringv1.AppNotReady, ready: "False", progressing: "True", reason: rollout.ReasonRollingOut},
		"complete":          {d: deployment(1, 1, 2, 2), phase: mooringv1.AppRunning, ready: "True", progressing: "False", reason: rollout.ReasonRolloutComplete},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			app := newApp(nil) // wants 2 replicas
			deriveStatus(app, tt.d, nil)
			if app.Status.Phase != tt.phase {
				t.Errorf("phase = %s, want %s", app.Status.Phase, tt.phase)
			}
			if app.Status.Replicas != tt.d.Status.Replicas || app.Status.AvailableReplicas != tt.d.Status.AvailableReplicas {
				t.Errorf("replicas %d available %d, want the Deployment's %d and %d", app.Status.Replicas,
					app.Status.AvailableReplicas, tt.d.Status.Replicas, tt.d.Status.AvailableReplicas)
			}
			ready := meta.FindStatusCondition(app.Status.Conditions, engine.ConditionReady)
			prog := meta.FindStatusCondition(app.Status.Conditions, engine.ConditionProgressing)
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
