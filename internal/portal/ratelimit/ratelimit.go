// Package ratelimit counts requests per key (a user id or a client IP) in a sliding
// window. It keeps counts in the memory of one replica: with N replicas behind a load
// balancer a client gets up to N times the limit (see docs/portal.md).
package ratelimit

import (
	"sync"
	"time"
)

// Limiter is a sliding-window counter: a request is allowed when the requests of the
// current fixed window plus the previous window's, weighted by how much of it still
// overlaps the sliding window, stay within Limit. That approximates a true sliding log
// closely with two counters per key instead of one timestamp per request.
type Limiter struct {
	limit  int
	window time.Duration
	now    func() time.Time

	mu   sync.Mutex
	keys map[string]*counter
	// sweepAt is when idle keys are next dropped.
	sweepAt time.Time
}

type counter struct {
	start      time.Time // start of the current fixed window
	prev, curr int
}

// Decision is what Allow decided, with what the RateLimit-* headers need.
type Decision struct {
	Allowed bool
	// Limit is the number of requests allowed per window.
	Limit int
	// Remaining is how many more requests would be allowed now.
	Remaining int
	// Reset is when the count has fallen enough for one more request (Retry-After when
	// refused), at least one second.
	Reset time.Duration
}

// New returns a Limiter allowing limit requests per window per key; now is the clock
// (time.Now when nil).
func New(limit int, window time.Duration, now func() time.Time) *Limiter {
	if now == nil {
		now = time.Now
	}
	return &Limiter{limit: limit, window: window, now: now, keys: map[string]*counter{}}
}

// Allow counts one request for key when it is allowed.
func (l *Limiter) Allow(key string) Decision {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sweep(now)
	c := l.keys[key]
	if c == nil {
		c = &counter{start: now.Truncate(l.window)}
		l.keys[key] = c
	}
	c.advance(now, l.window)
	used := c.weighted(now, l.window)
	d := Decision{Limit: l.limit}
	if used+1 <= float64(l.limit) {
		c.curr++
		d.Allowed = true
		used++
	}
	d.Remaining = max(0, int(float64(l.limit)-used))
	d.Reset = c.reset(now, l.window, l.limit)
	return d
}

// advance moves the fixed windows forward to the one that holds now.
func (c *counter) advance(now time.Time, window time.Duration) {
	switch elapsed := now.Sub(c.start); {
	case elapsed >= 2*window:
		c.prev, c.curr, c.start = 0, 0, now.Truncate(window)
	case elapsed >= window:
		c.prev, c.curr, c.start = c.curr, 0, c.start.Add(window)
	}
}

// weighted is the sliding-window count at now.
func (c *counter) weighted(now time.Time, window time.Duration) float64 {
	overlap := 1 - float64(now.Sub(c.start))/float64(window)
	return float64(c.prev)*overlap + float64(c.curr)
}

// reset is how long until one more request fits, found by stepping forward: the count
// only falls as the previous window slides out or the current one becomes previous.
func (c *counter) reset(now time.Time, window time.Duration, limit int) time.Duration {
	probe := *c
	step := max(window/100, 10*time.Millisecond)
	for d := time.Duration(0); d <= 2*window; d += step {
		t := now.Add(d)
		probe.advance(t, window)
		if probe.weighted(t, window)+1 <= float64(limit) {
			// Rounded up: a client that waits this long must find room.
			return max((d+time.Second-1)/time.Second*time.Second, time.Second)
		}
	}
	return 2 * window
}

// sweep drops keys idle for two windows, at most once per window.
func (l *Limiter) sweep(now time.Time) {
	if now.Before(l.sweepAt) {
		return
	}
	l.sweepAt = now.Add(l.window)
	for k, c := range l.keys {
		if now.Sub(c.start) >= 2*l.window {
			delete(l.keys, k)
		}
	}
}
