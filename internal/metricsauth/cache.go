package metricsauth

import (
	"sync"
	"time"
)

// ttlCache is a small map whose entries expire. It is bounded: when full, expired entries
// are dropped, and if none had expired the whole map is, since an entry only saves one
// review request.
type ttlCache[V any] struct {
	mu      sync.Mutex
	max     int
	entries map[string]ttlEntry[V]
}

type ttlEntry[V any] struct {
	value   V
	expires time.Time
}

func newTTLCache[V any](capacity int) *ttlCache[V] {
	return &ttlCache[V]{max: capacity, entries: map[string]ttlEntry[V]{}}
}

// get returns the value stored under key unless it has expired at now.
func (c *ttlCache[V]) get(key string, now time.Time) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok || !now.Before(e.expires) {
		var zero V
		return zero, false
	}
	return e.value, true
}

// put stores value under key for ttl from now.
func (c *ttlCache[V]) put(key string, value V, now time.Time, ttl time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[key]; !ok && len(c.entries) >= c.max {
		for k, e := range c.entries {
			if !now.Before(e.expires) {
				delete(c.entries, k)
			}
		}
		if len(c.entries) >= c.max {
			clear(c.entries)
		}
	}
	c.entries[key] = ttlEntry[V]{value: value, expires: now.Add(ttl)}
}
