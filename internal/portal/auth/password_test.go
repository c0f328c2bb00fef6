package auth

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestPasswordHashingIsBounded checks at most MaxConcurrentHashes Argon2id computations
// run at once, however many checks arrive together: each holds 19 MiB.
func TestPasswordHashingIsBounded(t *testing.T) {
	h, err := HashPassword(context.Background(), "a long enough password")
	if err != nil {
		t.Fatal(err)
	}
	var running, most atomic.Int32
	gate := make(chan struct{})
	realIDKey := idKey
	idKey = func(password, salt []byte, time, memory uint32, threads uint8, keyLen uint32) []byte {
		n := running.Add(1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		<-gate
		defer running.Add(-1)
		return realIDKey(password, salt, time, memory, threads, keyLen)
	}
	t.Cleanup(func() { idKey = realIDKey })

	const callers = 5 * MaxConcurrentHashes
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for range callers {
		wg.Go(func() { _, err := CheckPassword(context.Background(), h, "a long enough password"); errs <- err })
	}
	// Every caller is either hashing or queued for a slot.
	for deadline := time.Now().Add(10 * time.Second); running.Load()+hashWaiters.Load() < callers; {
		if time.Now().After(deadline) {
			t.Fatalf("callers never all arrived: %d hashing, %d waiting", running.Load(), hashWaiters.Load())
		}
		time.Sleep(time.Millisecond)
	}
	if n := running.Load(); n != MaxConcurrentHashes {
		t.Errorf("%d hashes running at once with %d callers, want %d", n, callers, MaxConcurrentHashes)
	}
	close(gate)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("a queued check failed: %v", err)
		}
	}
	if m := most.Load(); m > MaxConcurrentHashes {
		t.Errorf("at most %d hashes ran at once, want at most %d", m, MaxConcurrentHashes)
	}
	if n := hashWaiters.Load(); n != 0 {
		t.Errorf("%d callers still counted as waiting", n)
	}

	// A caller that gives up while queued leaves the queue.
	for range MaxConcurrentHashes {
		hashSlots <- struct{}{}
	}
	defer func() {
		for range MaxConcurrentHashes {
			<-hashSlots
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := CheckPassword(ctx, h, "a long enough password"); done <- err }()
	for deadline := time.Now().Add(10 * time.Second); hashWaiters.Load() == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the check never queued")
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("a check cancelled while queued: want context.Canceled, got %v", err)
	}
}
