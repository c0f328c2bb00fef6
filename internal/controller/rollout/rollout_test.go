package rollout

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
)

// deployment is a Deployment at generation gen whose controller has observed generation
// observed and reports the given counts.
func deployment(gen, observed int64, replicas, updated, available int32, conds ...appsv1.DeploymentCondition) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Generation: gen},
		Status: appsv1.DeploymentStatus{ObservedGeneration: observed, Replicas: replicas, UpdatedReplicas: updated,
			AvailableReplicas: available, UnavailableReplicas: replicas - available, Conditions: conds},
	}
}

func TestEvaluate(t *testing.T) {
	stuck := appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded"}
	quota := appsv1.DeploymentCondition{Type: appsv1.DeploymentReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate",
		Message: `pods "web-7d9c5-x2k4q" is forbidden: exceeded quota: compute, requested: cpu=2, used: cpu=0, limited: cpu=1`}
	cleared := quota
	cleared.Status = corev1.ConditionFalse
	tests := map[string]struct {
		want              int32
		d                 *appsv1.Deployment
		phase             Phase
		ready             metav1.ConditionStatus
		readyReason       string
		progressing       metav1.ConditionStatus
		progressingReason string
		messageHas        string // in the Ready or Progressing message
	}{
		"not yet observed": {
			want: 2, d: deployment(1, 0, 0, 0, 0), phase: Pending,
			ready: metav1.ConditionFalse, readyReason: mooringv1.ReasonReplicasUnavailable,
			progressing: metav1.ConditionTrue, progressingReason: mooringv1.ReasonDeploymentPending, messageHas: "observe the latest spec",
		},
		"no pods available": {
			want: 2, d: deployment(1, 1, 2, 2, 0), phase: Pending,
			ready: metav1.ConditionFalse, readyReason: mooringv1.ReasonReplicasUnavailable,
			progressing: metav1.ConditionTrue, progressingReason: mooringv1.ReasonRollingOut, messageHas: "No replica available yet (0 of 2)",
		},
		"partly available": {
			want: 2, d: deployment(1, 1, 2, 2, 1), phase: NotReady,
			ready: metav1.ConditionFalse, readyReason: mooringv1.ReasonReplicasUnavailable,
			progressing: metav1.ConditionTrue, progressingReason: mooringv1.ReasonRollingOut, messageHas: "1 of 2 replicas available",
		},
		"complete": {
			want: 2, d: deployment(1, 1, 2, 2, 2), phase: Running,
			ready: metav1.ConditionTrue, readyReason: mooringv1.ReasonAllReplicasAvailable,
			progressing: metav1.ConditionFalse, progressingReason: mooringv1.ReasonRolloutComplete, messageHas: "Rollout complete: 2 of 2",
		},
		"old replica set still around": {
			want: 2, d: deployment(2, 2, 3, 2, 2), phase: NotReady,
			ready: metav1.ConditionFalse, readyReason: mooringv1.ReasonReplicasUnavailable,
			progressing: metav1.ConditionTrue, progressingReason: mooringv1.ReasonRollingOut,
		},
		"scaled up, Deployment not caught up": {
			want: 3, d: deployment(2, 1, 2, 2, 2), phase: NotReady,
			ready: metav1.ConditionFalse, readyReason: mooringv1.ReasonReplicasUnavailable,
			progressing: metav1.ConditionTrue, progressingReason: mooringv1.ReasonDeploymentPending,
		},
		"deadline exceeded": {
			want: 2, d: deployment(1, 1, 2, 1, 1, stuck), phase: NotReady,
			ready: metav1.ConditionFalse, readyReason: mooringv1.ReasonReplicasUnavailable,
			progressing: metav1.ConditionFalse, progressingReason: mooringv1.ReasonProgressDeadlineExceed, messageHas: "kubectl describe pods",
		},
		"pods cannot be created": {
			want: 2, d: deployment(1, 1, 0, 0, 0, quota), phase: Pending,
			ready: metav1.ConditionFalse, readyReason: mooringv1.ReasonReplicaFailure,
			progressing: metav1.ConditionFalse, progressingReason: mooringv1.ReasonReplicaFailure,
			messageHas: "cannot create pods (FailedCreate): pods are forbidden: exceeded quota: compute",
		},
		"scaled up beyond the quota": {
			want: 3, d: deployment(1, 1, 2, 2, 2, quota), phase: NotReady,
			ready: metav1.ConditionFalse, readyReason: mooringv1.ReasonReplicaFailure,
			progressing: metav1.ConditionFalse, progressingReason: mooringv1.ReasonReplicaFailure, messageHas: "2 of 3 replicas available; the Deployment cannot create pods",
		},
		"replica failure cleared": {
			want: 2, d: deployment(1, 1, 2, 2, 2, cleared), phase: Running,
			ready: metav1.ConditionTrue, readyReason: mooringv1.ReasonAllReplicasAvailable,
			progressing: metav1.ConditionFalse, progressingReason: mooringv1.ReasonRolloutComplete,
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			r := Evaluate(Observe(tt.want, tt.d))
			if r.Phase != tt.phase {
				t.Errorf("phase = %s, want %s", r.Phase, tt.phase)
			}
			if r.Ready.Status != tt.ready || r.Ready.Reason != tt.readyReason {
				t.Errorf("Ready = %+v, want %s/%s", r.Ready, tt.ready, tt.readyReason)
			}
			if r.Progressing.Status != tt.progressing || r.Progressing.Reason != tt.progressingReason {
				t.Errorf("Progressing = %+v, want %s/%s", r.Progressing, tt.progressing, tt.progressingReason)
			}
			if r.Ready.Message == "" || r.Progressing.Message == "" {
				t.Errorf("empty message: Ready %q Progressing %q", r.Ready.Message, r.Progressing.Message)
			}
			if tt.messageHas != "" && !strings.Contains(r.Ready.Message+" "+r.Progressing.Message, tt.messageHas) {
				t.Errorf("messages %q / %q do not say %q", r.Ready.Message, r.Progressing.Message, tt.messageHas)
			}
		})
	}
}
