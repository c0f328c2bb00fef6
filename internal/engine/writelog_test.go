package engine

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
)

// The debug log of a status write names what differed, conditions by type, so that a
// write nobody expected can be traced to its cause from the log alone.
func TestStatusDiffs(t *testing.T) {
	ready := func(msg string, gen int64, at metav1.Time) metav1.Condition {
		return metav1.Condition{Type: mooringv1.ConditionReady, Status: metav1.ConditionFalse, Reason: "Progressing",
			Message: msg, ObservedGeneration: gen, LastTransitionTime: at}
	}
	t0, t1 := metav1.Unix(1000, 0), metav1.Unix(2000, 0)
	base := func() *mooringv1.App {
		a := &mooringv1.App{}
		a.Status.ObservedGeneration = 1
		a.Status.Conditions = []metav1.Condition{
			{Type: "Progressing", Status: metav1.ConditionTrue, Reason: "Rolling", LastTransitionTime: t0},
			ready("Waiting", 1, t0),
		}
		return a
	}
	tests := map[string]struct {
		change func(*mooringv1.App)
		want   []string
	}{
		"nothing":             {change: func(*mooringv1.App) {}, want: nil},
		"observed generation": {change: func(a *mooringv1.App) { a.Status.ObservedGeneration = 2 }, want: []string{"observedGeneration"}},
		"one condition's message and time": {
			change: func(a *mooringv1.App) { a.Status.Conditions[1] = ready("Rolled", 1, t1) },
			want:   []string{"conditions[Ready].lastTransitionTime", "conditions[Ready].message"},
		},
		"a condition added in front": {
			change: func(a *mooringv1.App) {
				a.Status.Conditions = append([]metav1.Condition{{Type: "Paused", Status: metav1.ConditionTrue, Reason: "Paused", LastTransitionTime: t0}},
					a.Status.Conditions...)
			},
			want: []string{"conditions[Paused] (added)"},
		},
		"a condition removed": {
			change: func(a *mooringv1.App) { a.Status.Conditions = a.Status.Conditions[1:] },
			want:   []string{"conditions[Progressing] (removed)"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			before, after := base(), base()
			tc.change(after)
			if got := statusDiffs(before, after, maxLoggedDiffs); !slices.Equal(got, tc.want) {
				t.Errorf("statusDiffs = %q, want %q", got, tc.want)
			}
		})
	}
}
