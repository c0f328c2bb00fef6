package main

import (
	"context"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"os"
	"sync"
	"time"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
)

// request is one read a user makes: a list of a kind in the user's namespace, or a get
// of one object there (name set).
type request struct {
	user       int
	namespace  string
	kind, name string
}

// newStream is the request stream both targets get: users in turn, each time a list
// of Apps, a list of CacheInstances, a get of an App or a get of a CacheInstance, drawn
// with seed.
func newStream(seed int64, users []*user, apps, caches int) func(i int) request {
	rnd := rand.New(rand.NewSource(seed))
	const n = 1 << 14 // repeats after this many; long enough not to matter
	reqs := make([]request, n)
	for i := range reqs {
		u := users[i%len(users)]
		r := request{user: i % len(users), namespace: u.namespace}
		op := rnd.Intn(4)
		if caches == 0 {
			op &^= 1 // Apps only
		}
		switch op {
		case 0:
			r.kind = mooringv1.ResourceApps
		case 1:
			r.kind = mooringv1.ResourceCacheInstances
		case 2:
			r.kind, r.name = mooringv1.ResourceApps, appName(rnd.Intn(apps))
		case 3:
			r.kind, r.name = mooringv1.ResourceCacheInstances, cacheName(rnd.Intn(caches))
		}
		reqs[i] = r
	}
	return func(i int) request { return reqs[i%n] }
}

func appName(i int) string   { return fmt.Sprintf("app-%03d", i) }
func cacheName(i int) string { return fmt.Sprintf("cache-%03d", i) }

// target turns a request into an HTTP request to one server, with the user's
// credentials, and the client to send it with.
type target interface {
	httpRequest(ctx context.Context, r request) (*http.Request, *http.Client, error)
}

// drive sends n requests of stream, from the first'th, to t at rate, open loop: each
// request leaves when its tick comes, whether or not earlier ones have been answered,
// and its latency counts from then. It returns once every request sent has been
// answered, with the time from the first send to the last answer.
func drive(ctx context.Context, name string, t target, stream func(int) request, first, n int, rate float64) ([]result, time.Duration, error) {
	results := make([]result, n)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer tick.Stop()
	start := time.Now()
	due := start
	for i := 0; i < n; i++ {
		if i > 0 {
			select {
			case <-ctx.Done():
				return nil, 0, ctx.Err()
			case due = <-tick.C: // when the tick fell due, even if read late
			}
		}
		wg.Add(1)
		go func(i int, due time.Time) {
			defer wg.Done()
			status, err := send(ctx, t, stream(first+i))
			results[i] = result{latency: time.Since(due), ok: err == nil && status == http.StatusOK}
			if !results[i].ok {
				mu.Lock()
				if firstErr == nil {
					if err == nil {
						err = fmt.Errorf("status %d", status)
					}
					firstErr = fmt.Errorf("request %d (%+v): %w", first+i, stream(first+i), err)
				}
				mu.Unlock()
			}
		}(i, due)
	}
	wg.Wait()
	elapsed := time.Since(start)
	if firstErr != nil {
		fmt.Fprintf(os.Stderr, "%s: first failure: %v\n", name, firstErr)
	}
	return results, elapsed, nil
}

// warmUp sends every user's first requests once, one after the other, so that
// connections are open and caches filled before the clock starts; any failure here is
// a set-up error, not a measurement.
func warmUp(ctx context.Context, t target, stream func(int) request) error {
	for i := 0; i < 200; i++ {
		req, c, err := t.httpRequest(ctx, stream(i))
		if err != nil {
			return err
		}
		resp, err := c.Do(req)
		if err != nil {
			return err
		}
		body, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: status %d: %s", req.URL, resp.StatusCode, body)
		}
	}
	return nil
}

// send makes one request and reads its whole answer, as a client decoding it would.
func send(ctx context.Context, t target, r request) (int, error) {
	req, c, err := t.httpRequest(ctx, r)
	if err != nil {
		return 0, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer func() { _ = resp.Body.Close() }()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return resp.StatusCode, err
	}
	return resp.StatusCode, nil
}
