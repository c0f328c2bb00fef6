package server

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"k8s.io/client-go/rest"

	"github.com/mooringhq/mooring/internal/portal/store"
)

// startUserCache starts the watch-fed cache of Users that authentication reads (see
// store.Cached) and waits, as long as ctx lets it, until it holds every User. It runs
// until the returned stop is called (which waits for it), not until ctx ends: New's
// context only bounds the start.
func startUserCache(ctx context.Context, k *store.Kube, rc *rest.Config) (*store.Cached, func(), error) {
	cached, err := store.NewCached(k, rc, Scheme)
	if err != nil {
		return nil, nil, err
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := cached.Run(runCtx); err != nil {
			slog.ErrorContext(runCtx, "The cache of Users stopped; authentication reads the API server", "err", err)
		}
	}()
	var once sync.Once
	stop := func() { once.Do(func() { cancel(); <-done }) }
	// A Run that fails before the cache is filled ends the wait too.
	waitCtx, endWait := context.WithCancel(ctx)
	defer endWait()
	go func() {
		select {
		case <-done:
			endWait()
		case <-waitCtx.Done():
		}
	}()
	if !cached.WaitForSync(waitCtx) {
		stop()
		return nil, nil, fmt.Errorf("fill the cache of Users: %w", context.Cause(waitCtx))
	}
	return cached, stop, nil
}
