//go:build unix

package nodeimage

import (
	"context"
	"errors"
	"os"
	"syscall"
	"time"
)

// lockPoll is how often a builder waiting for another one's lock tries again.
const lockPoll = 250 * time.Millisecond

// lock takes an exclusive flock on path, made when missing, and returns its release.
// The kernel drops the lock when its holder dies, so a crashed builder never blocks the
// next one. Waiting ends with ctx.
func lock(ctx context.Context, path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			// Closing the file releases the lock.
			return func() { _ = f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			_ = f.Close()
			return nil, err
		}
		select {
		case <-ctx.Done():
			_ = f.Close()
			return nil, context.Cause(ctx)
		case <-time.After(lockPoll):
		}
	}
}
