package metrics

import (
	"context"
	"sync/atomic"
)

// leaderFlag is a manager Runnable that needs leader election: the manager starts it once
// this replica is elected (at once when leader election is off), and it stays up until the
// manager stops. Leading says whether that happened, for the collector to check at scrape
// time without touching the cache of a replica that is not leading.
type leaderFlag struct{ leading atomic.Bool }

// Start marks the replica as leader until ctx ends.
func (l *leaderFlag) Start(ctx context.Context) error {
	l.leading.Store(true)
	<-ctx.Done()
	l.leading.Store(false)
	return nil
}

// NeedLeaderElection is true: Start runs on the leader only.
func (*leaderFlag) NeedLeaderElection() bool { return true }

// Leading reports whether this replica is the elected leader.
func (l *leaderFlag) Leading() bool { return l.leading.Load() }
