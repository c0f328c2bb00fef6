package backup

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/internal/controller/database"
	"github.com/mooringhq/mooring/internal/engine"
	"github.com/mooringhq/mooring/internal/webhook"
)

// A Backup admitted before the webhook checked schedules, whose schedule never runs or
// runs more often than backups can finish, is Ready=False InvalidSchedule, naming the field
// and the reason, not Ready=True Scheduled.
func TestInvalidScheduleNotReady(t *testing.T) {
	for schedule, why := range map[string]string{"0 0 30 2 *": "never runs", "@every 1s": "more often than backups can finish"} {
		b := newBackup(func(b *mooringv1.Backup) { b.Spec.Schedule = schedule })
		err := webhook.ValidateSchedule(schedule)
		if err == nil {
			t.Fatalf("schedule %q accepted", schedule)
		}
		deriveStatus(b, observed{scheduleProblem: "spec.schedule " + err.Error()})
		c := meta.FindStatusCondition(b.Status.Conditions, mooringv1.ConditionReady)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != mooringv1.ReasonInvalidSchedule || b.Status.Phase != mooringv1.BackupFailed {
			t.Errorf("schedule %q: Ready %+v phase %s, want False %s, phase Failed", schedule, c, b.Status.Phase, mooringv1.ReasonInvalidSchedule)
			continue
		}
		if !strings.Contains(c.Message, "spec.schedule") || !strings.Contains(c.Message, why) {
			t.Errorf("schedule %q: message %q does not say spec.schedule %s", schedule, c.Message, why)
		}
	}
}

// The webhook cannot import this package's builders (they import it); it knows a
// database's data volume by the same name and labels.
func TestWebhookKnowsDatabaseVolumes(t *testing.T) {
	if db, ok := webhook.DataVolumeOf(database.DataVolume + "-orders-0"); !ok || db != "orders" {
		t.Errorf("DataVolumeOf(%s-orders-0) = %q %v", database.DataVolume, db, ok)
	}
	if db, ok := webhook.DatabaseVolumeLabels(engine.Labels(database.Component, "orders")); !ok || db != "orders" {
		t.Errorf("DatabaseVolumeLabels(the database's labels) = %q %v", db, ok)
	}
	if _, ok := webhook.DatabaseVolumeLabels(engine.Labels(Component, "orders")); ok {
		t.Error("a Backup's own volume taken for a database's")
	}
}
