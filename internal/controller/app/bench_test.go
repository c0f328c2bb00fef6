package app_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/internal/apimetrics"
	"github.com/mooringhq/mooring/internal/testutil"
)

// BenchmarkAppConvergence measures how fast the manager turns a batch of new Apps into
// their children and status on a real API server, and what that costs in API writes.
// Reported: apps/s, and writes/app (ConfigMap and Deployment creates, the status apply,
// the event). `make bench-go` runs it; compare apps/s × writes/app with the ~900
// writes/s this machine's API server takes at most.
func BenchmarkAppConvergence(b *testing.B) {
	const batch, creators = 100, 16
	for i := 0; b.Loop(); i++ {
		ns := env.Namespace(b)
		before := apimetrics.Snapshot()
		start := time.Now()
		// Create from several goroutines: one client creating in sequence (each create
		// also passes the validating webhook) would measure the test, not the operator.
		var wg sync.WaitGroup
		errs := make(chan error, batch)
		for w := range creators {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := w; j < batch; j += creators {
					a := &mooringv1.App{
						ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bench-%d", j), Namespace: ns},
						// No port: envtest's Service IP range holds ~250 Services, too few
						// for several rounds.
						Spec: mooringv1.AppSpec{Image: "nginx:1.27", Replicas: ptr.To[int32](1), Config: "x"},
					}
					if err := env.Client.Create(ctx, a); err != nil {
						errs <- err
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
		testutil.Eventually(b, 2*time.Minute, fmt.Sprintf("%d Apps reconciled", batch), func() error {
			list := &mooringv1.AppList{}
			if err := env.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
				return err
			}
			done := 0
			for _, a := range list.Items {
				if a.Status.ObservedGeneration == a.Generation && a.Status.Phase != "" {
					done++
				}
			}
			if done < batch {
				return fmt.Errorf("%d of %d reconciled", done, batch)
			}
			return nil
		})
		elapsed := time.Since(start)
		var writes float64
		for _, v := range apimetrics.Writes(before, apimetrics.Snapshot()) {
			writes += v
		}
		b.ReportMetric(float64(batch)/elapsed.Seconds(), "apps/s")
		b.ReportMetric(writes/batch, "writes/app")
	}
}

// BenchmarkConvergedResync measures a reconcile of an App that needs nothing: reads from
// the cache only. Reported: reconciles/s and writes (which must be 0).
func BenchmarkConvergedResync(b *testing.B) {
	ns := env.Namespace(b)
	const n = 50
	for j := range n {
		a := &mooringv1.App{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("quiet-%d", j), Namespace: ns},
			Spec:       mooringv1.AppSpec{Image: "nginx:1.27", Replicas: ptr.To[int32](1), Port: ptr.To[int32](80)},
		}
		if err := env.Client.Create(ctx, a); err != nil {
			b.Fatal(err)
		}
	}
	testutil.Settle(b)
	for i := 0; b.Loop(); i++ {
		before := apimetrics.Snapshot()
		reconciles := testutil.ReconcileCount(b, "app")
		start := time.Now()
		for j := range n {
			a := &mooringv1.App{}
			key := client.ObjectKey{Namespace: ns, Name: fmt.Sprintf("quiet-%d", j)}
			testutil.Update(b, env.Client, key, a, func(a *mooringv1.App) {
				a.Annotations = map[string]string{"bench/round": fmt.Sprint(i)}
			})
		}
		testutil.Eventually(b, time.Minute, "every App reconciled", func() error {
			if got := testutil.ReconcileCount(b, "app") - reconciles; got < n {
				return fmt.Errorf("%v of %d", got, n)
			}
			return nil
		})
		elapsed := time.Since(start)
		var writes float64
		for _, v := range apimetrics.Writes(before, apimetrics.Snapshot()) {
			writes += v
		}
		b.ReportMetric(n/elapsed.Seconds(), "reconciles/s")
		b.ReportMetric(writes, "writes")
	}
}
