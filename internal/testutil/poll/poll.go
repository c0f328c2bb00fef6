package poll

import (
	"fmt"
	"testing"
	"time"
)

// DefaultTimeout bounds every wait; generous because the two CPU cores are shared with a
// whole control plane.
const DefaultTimeout = 30 * time.Second

// Eventually calls check every 100ms until it returns nil or timeout passes, then fails the
// test with what was awaited and the last thing check reported.
func Eventually(t testing.TB, timeout time.Duration, what string, check func() error) {
	t.Helper()
	if err := Poll(timeout, check); err != nil {
		t.Fatalf("timed out after %s waiting for %s: %v", timeout, what, err)
	}
}

// Poll is Eventually without a test: it returns the last error after the timeout.
//
// Poll cannot interrupt check, and looks at the deadline only after check returns: a
// check that talks to a process which may hang (an HTTP GET, a kubectl, during an outage)
// must bound each attempt itself (http.Client{Timeout}, exec.CommandContext, a context
// with a timeout), or a hang outlasts the deadline and ends as go test's own timeout
// rather than this message.
func Poll(timeout time.Duration, check func() error) error {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		err := check()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("last seen: %w", err)
		}
		<-tick.C
	}
}
