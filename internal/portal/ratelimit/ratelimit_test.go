package ratelimit

import (
	"testing"
	"time"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func TestSlidingWindow(t *testing.T) {
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	l := New(10, time.Minute, c.now)
	for i := range 10 {
		if d := l.Allow("a"); !d.Allowed || d.Remaining != 9-i {
			t.Fatalf("request %d: want allowed with %d remaining, got %+v", i+1, 9-i, d)
		}
	}
	d := l.Allow("a")
	if d.Allowed || d.Reset < time.Second {
		t.Fatalf("11th request: want refused with a reset of at least 1s, got %+v", d)
	}
	if d := l.Allow("b"); !d.Allowed {
		t.Fatalf("another key must have its own count, got %+v", d)
	}
	// Half a window into the next fixed window, half of the previous 10 still count:
	// 5 more fit, not 10 — what a fixed window would wrongly allow.
	c.t = c.t.Add(90 * time.Second)
	allowed := 0
	for range 10 {
		if l.Allow("a").Allowed {
			allowed++
		}
	}
	if allowed != 5 {
		t.Fatalf("half-way into the next window: want 5 allowed, got %d", allowed)
	}
	// Two idle windows later the key starts afresh.
	c.t = c.t.Add(3 * time.Minute)
	if d := l.Allow("a"); !d.Allowed || d.Remaining != 9 {
		t.Fatalf("after idle windows: want allowed with 9 remaining, got %+v", d)
	}
}

func TestResetTellsWhenTheNextRequestFits(t *testing.T) {
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	l := New(3, 10*time.Second, c.now)
	for range 3 {
		l.Allow("k")
	}
	d := l.Allow("k")
	if d.Allowed {
		t.Fatal("4th request within the window was allowed")
	}
	c.t = c.t.Add(d.Reset)
	if d2 := l.Allow("k"); !d2.Allowed {
		t.Fatalf("after waiting Reset=%s the next request must fit, got %+v", d.Reset, d2)
	}
}
