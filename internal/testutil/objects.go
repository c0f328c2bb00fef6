package testutil

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mooringhq/mooring/internal/apimetrics"
)

// reset zeroes the object obj points to, so a Get into it cannot keep fields (map
// entries, say) of an earlier read that the new one no longer has.
func reset(obj client.Object) {
	v := reflect.ValueOf(obj).Elem()
	v.Set(reflect.Zero(v.Type()))
}

// WaitFor reads the object at key into obj until check accepts it, and fails the test
// with what it last saw after DefaultTimeout. On return obj holds the accepted object.
func WaitFor[T client.Object](t testing.TB, c client.Reader, key types.NamespacedName, obj T, what string, check func(T) error) {
	t.Helper()
	Eventually(t, DefaultTimeout, what, func() error {
		reset(obj)
		if err := c.Get(context.Background(), key, obj); err != nil {
			return err
		}
		return check(obj)
	})
}

// WaitGone waits until the object at key no longer exists; obj says which kind.
func WaitGone(t testing.TB, c client.Reader, key types.NamespacedName, obj client.Object, what string) {
	t.Helper()
	WaitGoneWithin(t, DefaultTimeout, c, key, obj, what)
}

// WaitGoneWithin is WaitGone with another timeout, for deletions that wait on more than
// one reconcile (a workload on a loaded local cluster, say).
func WaitGoneWithin(t testing.TB, timeout time.Duration, c client.Reader, key types.NamespacedName, obj client.Object, what string) {
	t.Helper()
	Eventually(t, timeout, what, func() error {
		reset(obj)
		err := c.Get(context.Background(), key, obj)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		return fmt.Errorf("%s still exists (deletionTimestamp %v)", key, obj.GetDeletionTimestamp())
	})
}

// Update reads the object at key into obj, lets change modify it and writes it back,
// retrying on conflicts as a user's kubectl edit would.
func Update[T client.Object](t testing.TB, c client.Client, key types.NamespacedName, obj T, change func(T)) {
	t.Helper()
	err := Poll(10*time.Second, func() error {
		reset(obj)
		if err := c.Get(context.Background(), key, obj); err != nil {
			return err
		}
		change(obj)
		return c.Update(context.Background(), obj)
	})
	if err != nil {
		t.Fatalf("update %T %s: %v", obj, key, err)
	}
}

// Settle waits until the manager has sent no write for two seconds, so a measurement
// starts from a quiet state rather than in the tail of earlier work.
func Settle(t testing.TB) {
	t.Helper()
	last := apimetrics.Snapshot()
	quietSince := time.Now()
	Eventually(t, DefaultTimeout, "the manager to stop writing", func() error {
		now := apimetrics.Snapshot()
		if len(apimetrics.Writes(last, now)) > 0 {
			last, quietSince = now, time.Now()
		}
		if time.Since(quietSince) < 2*time.Second {
			return fmt.Errorf("last write %s ago", time.Since(quietSince).Round(time.Millisecond))
		}
		return nil
	})
}

// ExpectNoWrites checks that reconciling converged objects costs nothing: once the
// manager is quiet, it runs touch (which must make the controller reconcile at least
// reconciles objects without changing anything they derive from), waits for those
// reconciles, and fails the test if the manager sent any write to the API server.
func ExpectNoWrites(t testing.TB, controller string, reconciles int, touch func()) {
	t.Helper()
	Settle(t)
	before := apimetrics.Snapshot()
	reconcilesBefore := ReconcileCount(t, controller)
	touch()
	Eventually(t, DefaultTimeout, fmt.Sprintf("%d reconciles of the %s controller", reconciles, controller), func() error {
		if got := ReconcileCount(t, controller) - reconcilesBefore; got < float64(reconciles) {
			return fmt.Errorf("%v reconciles since the touch, want >= %d", got, reconciles)
		}
		return nil
	})
	if writes := apimetrics.Writes(before, apimetrics.Snapshot()); len(writes) != 0 {
		t.Fatalf("reconciling converged objects of the %s controller wrote to the API server: %v", controller, writes)
	}
}

// ExpectConvergedNoWrites waits until every object at keys passes reconciled, then touches
// each with an annotation Mooring derives nothing from (it passes the controllers'
// predicate, so each is reconciled again) and fails the test if those reconciles wrote
// anything to the API server.
func ExpectConvergedNoWrites[T client.Object](t testing.TB, c client.Client, controller string, keys []types.NamespacedName, newObj func() T, reconciled func(T) error) {
	t.Helper()
	for _, key := range keys {
		WaitFor(t, c, key, newObj(), key.Name+" reconciled", reconciled)
	}
	ExpectNoWrites(t, controller, len(keys), func() {
		for _, key := range keys {
			Update(t, c, key, newObj(), func(o T) {
				o.SetAnnotations(map[string]string{"example.com/touched": "yes"})
			})
		}
	})
}
