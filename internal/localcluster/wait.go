package localcluster

import (
	"context"
	"fmt"
	"time"
)

// pollInterval is how often readiness checks run while waiting.
const pollInterval = 250 * time.Millisecond

// check reports whether a condition holds, and what it saw when it does not.
type check func(ctx context.Context) (ok bool, seen string)

// waitFor polls c until it holds, the process p exits, timeout passes or ctx ends.
// Errors name the process and carry its log tail.
func waitFor(parent context.Context, p *process, what string, timeout time.Duration, c check) error {
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	ticker := time.NewTicker(pollInterval)
	defer ticker.Stop()
	seen := "nothing yet"
	for {
		callCtx, callCancel := context.WithTimeout(ctx, 5*time.Second)
		ok, s := c(callCtx)
		callCancel()
		if ok {
			return nil
		}
		if s != "" {
			seen = s
		}
		select {
		case <-p.done:
			return p.exitError()
		case <-ctx.Done():
			if p.exited() {
				return p.exitError()
			}
			if parent.Err() != nil {
				return fmt.Errorf("waiting for %s: %w", what, context.Cause(parent))
			}
			return p.failure(fmt.Errorf("%s not ready after %s (last seen: %s)", what, timeout, seen))
		case <-ticker.C:
		}
	}
}
