package devenv

import (
	"context"
	"time"
)

// pollUntil calls cond every 200ms until it returns true or an error, or ctx ends.
func pollUntil(ctx context.Context, cond func() (bool, error)) error {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, err := cond()
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}
