package schedule

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// MinInterval is the shortest time a Backup's schedule may leave between two runs.
// The CronJob controller names each Job after the minute it was scheduled for, so two runs
// in one minute collide, and a dump needs time to finish (with concurrencyPolicy Forbid a
// run due while the previous one still runs is skipped). A five-field cron schedule runs
// at most every minute; "@every 30s" would run more often.
const MinInterval = time.Minute

// Horizon is how far ahead a schedule is searched for its next run, as the CronJob
// controller's cron library (robfig/cron/v3) does: a schedule with no run in it never runs.
const Horizon = 5 * 365 * 24 * time.Hour

// runsChecked is how many runs, from a given time, Check looks at for the
// shortest interval between two of them.
const runsChecked = 200

// Check says why a Backup's schedule cannot be run by a CronJob, nil when it can:
// it must parse as the CronJob controller parses it (a five-field cron expression or a
// descriptor such as @daily, no time zone prefix), run at least once in the next five
// years from now (30 February never comes), and never run twice within
// MinInterval. The errors are phrased to follow the field's name.
func Check(schedule string, now time.Time) error {
	if strings.Contains(schedule, "TZ") {
		return fmt.Errorf("must not set a time zone (TZ= or CRON_TZ=); schedules run in the kube-controller-manager's time zone")
	}
	sched, err := cron.ParseStandard(schedule)
	if err != nil {
		return fmt.Errorf("must be a cron schedule such as \"0 3 * * *\" or \"@daily\": %w", err)
	}
	if every, ok := sched.(cron.ConstantDelaySchedule); ok {
		if every.Delay < MinInterval {
			return tooOften(every.Delay)
		}
		return nil
	}
	prev := sched.Next(now)
	if prev.IsZero() || prev.Sub(now) > Horizon {
		return fmt.Errorf("never runs: no time in the next five years matches it " +
			"(a day of the month that the month does not have, such as 30 February or 31 April, never comes)")
	}
	for range runsChecked {
		next := sched.Next(prev)
		if next.IsZero() {
			break
		}
		if gap := next.Sub(prev); gap < MinInterval {
			return tooOften(gap)
		}
		prev = next
	}
	return nil
}

func tooOften(every time.Duration) error {
	return fmt.Errorf("runs every %s, more often than backups can finish: runs must be at least %s apart "+
		"(the CronJob names each Job after its minute, and each dump needs time to finish)", every, formatInterval(MinInterval))
}

// formatInterval writes whole minutes in words ("1 minute", "5 minutes").
func formatInterval(d time.Duration) string {
	if d%time.Minute != 0 {
		return d.String()
	}
	if m := int(d / time.Minute); m != 1 {
		return fmt.Sprintf("%d minutes", m)
	}
	return "1 minute"
}

// Validate accepts what the CronJob controller can run: a standard five-field cron
// expression or a descriptor such as @daily, without a time zone prefix (the CronJob API
// rejects TZ= and CRON_TZ= in schedules), that runs at least once in the next five years
// and never twice within MinInterval (Check, from now).
func Validate(schedule string) error { return Check(schedule, time.Now()) }
