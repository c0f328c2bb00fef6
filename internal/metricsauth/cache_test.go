package metricsauth

import (
	"testing"
	"time"
)

func TestTTLCacheExpiresAndStaysBounded(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	c := newTTLCache[int](2)
	c.put("a", 1, now, time.Minute)
	if v, ok := c.get("a", now.Add(59*time.Second)); !ok || v != 1 {
		t.Errorf("before its TTL: got %d %v, want 1 true", v, ok)
	}
	if _, ok := c.get("a", now.Add(time.Minute)); ok {
		t.Error("at its TTL the entry is still returned")
	}

	c.put("b", 2, now, 10*time.Second)
	// Full: "b" has expired at now+20s and makes room; "a" has not and stays.
	c.put("c", 3, now.Add(20*time.Second), time.Minute)
	if _, ok := c.get("a", now.Add(30*time.Second)); !ok {
		t.Error("an unexpired entry was dropped while an expired one could make room")
	}
	if n := len(c.entries); n != 2 {
		t.Errorf("%d entries, want 2 (b dropped)", n)
	}
	// Full of live entries: the map starts over rather than grow.
	c.put("d", 4, now.Add(30*time.Second), time.Minute)
	if n := len(c.entries); n != 1 {
		t.Errorf("%d entries after inserting into a full cache of live entries, want 1", n)
	}
	if v, ok := c.get("d", now.Add(30*time.Second)); !ok || v != 4 {
		t.Errorf("the new entry: got %d %v", v, ok)
	}
}
