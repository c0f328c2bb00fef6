package main

import (
	"context"
	"testing"
	"time"
)

// fakeClock advances only when slept on.
type fakeClock struct{ t time.Time }

func (c *fakeClock) Now() time.Time { return c.t }
func (c *fakeClock) Sleep(_ context.Context, d time.Duration) error {
	c.t = c.t.Add(d)
	return nil
}

// A write sent just after the last CR was ready (an asynchronous event) is counted in the
// load once the writes settle; an operator that never stops writing is waited for only up
// to the limit.
func TestSettle(t *testing.T) {
	tests := map[string]struct {
		counts    []float64 // what each read returns; the last repeats
		growing   bool      // instead: one more write at every read
		wantCount float64
		wantWait  time.Duration
	}{
		"already quiet":         {counts: []float64{1500}, wantCount: 1500, wantWait: time.Second},
		"one late write":        {counts: []float64{1499, 1499, 1500}, wantCount: 1500, wantWait: 200*time.Millisecond + time.Second},
		"writes that never end": {growing: true, wantCount: 51, wantWait: 5 * time.Second},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			clk := &fakeClock{t: time.Unix(0, 0)}
			i := 0
			read := func() float64 {
				i++
				if tc.growing {
					return float64(i)
				}
				return tc.counts[min(i, len(tc.counts))-1]
			}
			got, waited, err := settle(context.Background(), clk, read, time.Second, 5*time.Second, 100*time.Millisecond)
			if err != nil || got != tc.wantCount || waited != tc.wantWait {
				t.Errorf("settle = %v after %v (%v), want %v after %v", got, waited, err, tc.wantCount, tc.wantWait)
			}
		})
	}
}
