package rollout

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
)

func waiting(name, reason, message string) corev1.Pod {
	return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.PodStatus{Phase: corev1.PodPending,
		ContainerStatuses: []corev1.ContainerStatus{{Name: "app", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}}}}}}
}

func TestPodFailures(t *testing.T) {
	crashed := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Status: corev1.PodStatus{Phase: corev1.PodRunning,
		ContainerStatuses: []corev1.ContainerStatus{{Name: "app", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 2, Reason: "Error"}}}}}}
	unschedulable := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "u"}, Status: corev1.PodStatus{Phase: corev1.PodPending,
		Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/3 nodes are available"}}}}
	running := func(name string, started, ready bool) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.PodStatus{Phase: corev1.PodRunning,
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Started: &started, Ready: ready,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}}
	}
	tests := map[string]struct {
		pods               []corev1.Pod
		wantReason, wantIn string
		wantFailing        int
	}{
		"none":                    {pods: nil},
		"starting is not failing": {pods: []corev1.Pod{waiting("a", "ContainerCreating", "")}},
		"image pull, first by name": {pods: []corev1.Pod{waiting("b", "CrashLoopBackOff", "x"), waiting("a", "ImagePullBackOff", "Back-off pulling image")},
			wantReason: "ImagePullBackOff", wantIn: "pod a, container app: Back-off pulling image", wantFailing: 2},
		"exited non-zero": {pods: []corev1.Pod{crashed}, wantReason: "Error", wantIn: "exited with code 2", wantFailing: 1},
		"unschedulable":   {pods: []corev1.Pod{unschedulable}, wantReason: "Unschedulable", wantIn: "0/3 nodes", wantFailing: 1},
		"health check not passed": {pods: []corev1.Pod{running("h", false, false)}, wantReason: mooringv1.ReasonHealthCheckNotPassed,
			wantIn: "pod h, container app runs but has not passed its health check", wantFailing: 1},
		"started, not ready yet":         {pods: []corev1.Pod{running("r", true, false)}},
		"reason not fit for a condition": {pods: []corev1.Pod{waiting("a", "bad reason!", "m")}, wantReason: mooringv1.ReasonPodsFailing, wantIn: "m", wantFailing: 1},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			f, n := FailureOf(tt.pods)
			if tt.wantReason == "" {
				if f != nil {
					t.Fatalf("failure %+v, want none", f)
				}
				return
			}
			if f == nil || f.Reason != tt.wantReason || !strings.Contains(f.Message, tt.wantIn) || n != tt.wantFailing {
				t.Fatalf("failure %+v (%d failing), want reason %s with %q, %d failing", f, n, tt.wantReason, tt.wantIn, tt.wantFailing)
			}
			r := Evaluate(State{Want: 1, Observed: true, Replicas: 1, Updated: 1, Unavailable: 1}.WithPods(tt.pods))
			if r.Phase != Pending || r.Ready.Reason != tt.wantReason || !strings.Contains(r.Ready.Message, tt.wantIn) {
				t.Fatalf("Evaluate = %+v, want Pending with Ready reason %s", r, tt.wantReason)
			}
		})
	}
	// A complete rollout is Running whatever an old pod still says.
	r := Evaluate(State{Want: 1, Observed: true, Replicas: 1, Updated: 1, Available: 1}.WithPods([]corev1.Pod{waiting("old", "ImagePullBackOff", "x")}))
	if r.Phase != Running {
		t.Fatalf("complete rollout with a failing old pod: %+v, want Running", r)
	}
}
