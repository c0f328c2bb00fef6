package schedule

import (
	"strings"
	"testing"
	"time"
)

// A schedule the CronJob controller runs is accepted; one it never runs, runs too often or
// cannot parse is refused, saying why.
func TestCheck(t *testing.T) {
	now := time.Date(2026, time.March, 1, 12, 0, 0, 0, time.UTC)
	tests := map[string]string{ // schedule: part of the reason, "" when accepted
		"0 3 * * *":          "",
		"@daily":             "",
		"*/1 * * * *":        "",
		"@every 1m":          "",
		"0 0 29 2 *":         "", // a leap day comes within five years
		"0 0 30 2 *":         "never runs",
		"0 0 31 4 *":         "never runs",
		"@every 30s":         "more often than backups can finish",
		"@every 0s":          "more often than backups can finish",
		"* * * * * *":        "must be a cron schedule",
		"CRON_TZ=UTC @daily": "must not set a time zone",
		"at noon":            "must be a cron schedule",
	}
	for sched, want := range tests {
		err := Check(sched, now)
		switch {
		case want == "" && err != nil:
			t.Errorf("%q refused: %v", sched, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%q: %v, want a refusal saying %q", sched, err, want)
		}
	}
}
