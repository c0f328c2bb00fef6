package cache

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
)

// The rollout decisions are tested in package rollout; this checks how a CacheInstance
// carries them: its phase enum, counts, selector, endpoint and conditions.
func TestDeriveStatus(t *testing.T) {
	deployment := func(gen, observed int64, replicas, available int32) *appsv1.Deployment {
		return &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Generation: gen},
			Status: appsv1.DeploymentStatus{ObservedGeneration: observed, Replicas: replicas, UpdatedReplicas: replicas,
				AvailableReplicas: available, UnavailableReplicas: replicas - available},
		}
	}
	tests := map[string]struct {
		d                           *appsv1.Deployment
		phase                       mooringv1.CacheInstancePhase
		ready, progressing          metav1.ConditionStatus
		readyReason, progressReason string
	}{
		"not yet observed": {
			d: deployment(1, 0, 0, 0), phase: mooringv1.CacheInstancePending,
			ready: metav1.ConditionFalse, readyReason: mooringv1.ReasonReplicasUnavailable,
			progressing: metav1.ConditionTrue, progressReason: mooringv1.ReasonDeploymentPending,
		},
		"no replica available": {
			d: deployment(1, 1, 2, 0), phase: mooringv1.CacheInstancePending,
			ready: metav1.ConditionFalse, readyReason: mooringv1.ReasonReplicasUnavailable,
			progressing: metav1.ConditionTrue, progressReason: mooringv1.ReasonRollingOut,
		},
		"one of two available": {
			d: deployment(1, 1, 2, 1), phase: mooringv1.CacheInstanceNotReady,
			ready: metav1.ConditionFalse, readyReason: mooringv1.ReasonReplicasUnavailable,
			progressing: metav1.ConditionTrue, progressReason: mooringv1.ReasonRollingOut,
		},
		"all available": {
			d: deployment(1, 1, 2, 2), phase: mooringv1.CacheInstanceRunning,
			ready: metav1.ConditionTrue, readyReason: mooringv1.ReasonAllReplicasAvailable,
			progressing: metav1.ConditionFalse, progressReason: mooringv1.ReasonRolloutComplete,
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			c := newCache(func(c *mooringv1.CacheInstance) {
				c.Generation = 4
				c.Spec.Replicas = ptr.To[int32](2)
				c.Spec.Port = ptr.To[int32](11300)
			})
			deriveStatus(c, tt.d, nil)
			st := c.Status
			if st.Phase != tt.phase {
				t.Errorf("phase = %s, want %s", st.Phase, tt.phase)
			}
			if st.Replicas != tt.d.Status.Replicas || st.AvailableReplicas != tt.d.Status.AvailableReplicas {
				t.Errorf("replicas %d available %d, want the Deployment's %d and %d",
					st.Replicas, st.AvailableReplicas, tt.d.Status.Replicas, tt.d.Status.AvailableReplicas)
			}
			if st.Endpoint != "sessions.team.svc:11300" {
				t.Errorf("endpoint = %q, want sessions.team.svc:11300", st.Endpoint)
			}
			if want := "app.kubernetes.io/component=cache,app.kubernetes.io/instance=sessions,app.kubernetes.io/name=sessions"; st.Selector != want {
				t.Errorf("selector = %q, want %q", st.Selector, want)
			}
			ready := meta.FindStatusCondition(st.Conditions, mooringv1.ConditionReady)
			prog := meta.FindStatusCondition(st.Conditions, mooringv1.ConditionProgressing)
			if ready == nil || ready.Status != tt.ready || ready.Reason != tt.readyReason || ready.Message == "" || ready.ObservedGeneration != 4 {
				t.Errorf("Ready = %+v, want %s/%s with a message, at generation 4", ready, tt.ready, tt.readyReason)
			}
			if prog == nil || prog.Status != tt.progressing || prog.Reason != tt.progressReason || prog.Message == "" {
				t.Errorf("Progressing = %+v, want %s/%s with a message", prog, tt.progressing, tt.progressReason)
			}
			if st.ObservedGeneration != 0 {
				t.Errorf("observedGeneration = %d; it is the engine's to set", st.ObservedGeneration)
			}
		})
	}
}
