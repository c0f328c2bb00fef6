package main

import (
	"context"
	"time"
)

// An operator's writes do not all end with the status write that makes the last CR
// ready: client-go sends events asynchronously, so the event a reconcile recorded before
// its status write may reach the API server after it. Counted from the moment the last
// CR is ready, such a write lands in the idle window and reads as a write made while
// nothing changed (in one of the first five 300-App runs of Mooring with its write log
// on: the last App's Created event, a POST 201 with no reconcile, which kube-apiserver
// had counted before the idle window began). So the load's counters are read
// once the operator's writes have settled: no new write for --settle-quiet, or
// --settle-max at most. The convergence times do not move; the writes that came after
// the last CR was ready are reported (load.writes_after_ready), and an operator that goes
// on writing is still caught: in the load's writes per CR while it settles, in the idle
// window after --settle-max.

// clock is time as settle sees it; a test gives it a fake one.
type clock interface {
	Now() time.Time
	Sleep(ctx context.Context, d time.Duration) error
}

type realClock struct{}

func (realClock) Now() time.Time                                   { return time.Now() }
func (realClock) Sleep(ctx context.Context, d time.Duration) error { return sleepCtx(ctx, d) }

// settle reads writes every poll until it has returned the same count for quiet, or until
// limit has passed; it returns the last count and how long it waited.
func settle(ctx context.Context, clk clock, writes func() float64, quiet, limit, poll time.Duration) (float64, time.Duration, error) {
	start := clk.Now()
	last, changed := writes(), start
	for {
		now := clk.Now()
		if now.Sub(changed) >= quiet || now.Sub(start) >= limit {
			return last, now.Sub(start), nil
		}
		if err := clk.Sleep(ctx, poll); err != nil {
			return last, clk.Now().Sub(start), err
		}
		if w := writes(); w != last {
			last, changed = w, clk.Now()
		}
	}
}
