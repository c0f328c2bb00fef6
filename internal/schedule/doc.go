// Package schedule checks a Backup's cron schedule as the CronJob controller will run it
// (robfig/cron/v3): the webhook refuses a schedule that never runs or runs too often, and
// the Backup controller reports one admitted before that check existed.
package schedule
