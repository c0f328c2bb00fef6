package backup

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/internal/schedule"
)

// A Backup admitted before the webhook checked schedules, whose schedule never runs or
// runs more often than backups can finish, is Ready=False InvalidSchedule, naming the field
// and the reason, not Ready=True Scheduled.
func TestInvalidScheduleNotReady(t *testing.T) {
	for sched, why := range map[string]string{"0 0 30 2 *": "never runs", "@every 1s": "more often than backups can finish"} {
		b := newBackup(func(b *mooringv1.Backup) { b.Spec.Schedule = sched })
		err := schedule.Validate(sched)
		if err == nil {
			t.Fatalf("schedule %q accepted", sched)
		}
		deriveStatus(b, observed{scheduleProblem: "spec.schedule " + err.Error()})
		c := meta.FindStatusCondition(b.Status.Conditions, mooringv1.ConditionReady)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != mooringv1.ReasonInvalidSchedule || b.Status.Phase != mooringv1.BackupFailed {
			t.Errorf("schedule %q: Ready %+v phase %s, want False %s, phase Failed", sched, c, b.Status.Phase, mooringv1.ReasonInvalidSchedule)
			continue
		}
		if !strings.Contains(c.Message, "spec.schedule") || !strings.Contains(c.Message, why) {
			t.Errorf("schedule %q: message %q does not say spec.schedule %s", sched, c.Message, why)
		}
	}
}
