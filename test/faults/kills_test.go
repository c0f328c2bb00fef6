package faults

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/internal/testutil"
	"github.com/mooringhq/mooring/internal/testutil/clusterenv"
)

// Size of the fleet and number of kills. 500 Apps (each a Deployment, a ConfigMap, a
// ReplicaSet and a pod on kwok) keep the whole package within its ~4 minute budget on
// two shared cores.
const (
	killFleet = 500
	kills     = 10
)

// The operator is killed with SIGKILL ten times during a 500-App fleet's convergence, and
// started again each time: the fleet converges with exactly one Deployment and ConfigMap
// per App, one ReplicaSet per Deployment, and no orphans.
//
// The fleet is resumed in ten batches, one per kill, and each kill comes at a random point
// inside its batch (after 1 to batch/4 of its Apps are Running). A restarted operator
// converges dozens of Apps before its first readiness check answers, so kill points counted
// over the whole fleet at once would fall after the end on a fast machine; and with 16
// workers a batch's second half converges within one poll, so later points would often
// land after their batch had finished.
func TestKilledTenTimesWhileFleetConverges(t *testing.T) {
	suite.EnsureOperator(t)
	ns := suite.Namespace(t, "kills")
	suite.Apply(t, ns, clusterenv.PausedFleet(killFleet, 0))

	batch := killFleet / kills
	t0 := time.Now()
	var points, seen []int
	inside := 0
	for i := range kills {
		resume(t, ns, i*batch, (i+1)*batch)
		p := i*batch + 1 + rand.IntN(batch/4)
		points = append(points, p)
		testutil.Eventually(t, 2*time.Minute, fmt.Sprintf("at least %d Apps Running", p), func() error {
			if n := runningApps(t, ns); n < p {
				return fmt.Errorf("%d Running", n)
			}
			return nil
		})
		if err := syscall.Kill(suite.Operator.Pid(), syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		stopOperator(t) // reaps it
		n := runningApps(t, ns)
		seen = append(seen, n)
		if n < (i+1)*batch {
			inside++
		}
		suite.EnsureOperator(t)
	}
	t.Logf("kill points %v; killed with %v Apps Running", points, seen)
	// A kill that lands just as its batch finishes is possible (the poll and the kill are
	// not atomic); most must land inside, or the test proves nothing.
	if inside < kills*8/10 {
		t.Errorf("only %d of %d kills landed while their batch was still converging", inside, kills)
	}
	testutil.Eventually(t, 3*time.Minute, "every App Running", func() error {
		if n := runningApps(t, ns); n != killFleet {
			return fmt.Errorf("%d of %d Running", n, killFleet)
		}
		return nil
	})
	t.Logf("%d Apps converged %s after the first resume, through %d SIGKILLs (%d inside a batch)", killFleet, time.Since(t0).Round(100*time.Millisecond), kills, inside)
	if n := suite.AssertOneChildEach(t, ns, &appsv1.DeploymentList{}, &corev1.ConfigMapList{}); n != killFleet {
		t.Errorf("%d Apps, want %d", n, killFleet)
	}
}

// runningApps counts the Apps of ns that are Running at their current generation.
func runningApps(t *testing.T, ns string) int {
	t.Helper()
	apps := &mooringv1.AppList{}
	if err := suite.Client.List(ctx, apps, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	running := 0
	for _, a := range apps.Items {
		if a.Status.Phase == mooringv1.AppRunning && a.Status.ObservedGeneration == a.Generation {
			running++
		}
	}
	return running
}

// resume removes the pause annotation of Apps app-<from>..app-<to-1> of ns at once (64
// requests in flight), so the batch starts converging together rather than one kubectl
// request at a time.
func resume(t *testing.T, ns string, from, to int) {
	t.Helper()
	apps := &mooringv1.AppList{}
	if err := suite.Client.List(ctx, apps, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"mooring.dev/paused":null}}}`))
	errs := make(chan error, len(apps.Items))
	slots := make(chan struct{}, 64)
	var wg sync.WaitGroup
	for i := range apps.Items {
		if idx, err := strconv.Atoi(strings.TrimPrefix(apps.Items[i].Name, "app-")); err != nil || idx < from || idx >= to {
			continue
		}
		wg.Add(1)
		slots <- struct{}{}
		go func(a *mooringv1.App) {
			defer func() { <-slots; wg.Done() }()
			errs <- suite.Client.Patch(ctx, a, patch)
		}(&apps.Items[i])
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err == nil {
			continue
		}
		t.Fatalf("resume the fleet: %v", err)
	}
}
