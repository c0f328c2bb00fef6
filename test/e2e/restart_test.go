package e2e

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/internal/testutil"
	"github.com/mooringhq/mooring/internal/testutil/clusterenv"
)

const fleetSize = 50

// The operator is killed (SIGKILL, no graceful shutdown) while 50 Apps converge; a new
// operator finishes the job with exactly one set of children per App. Then an operator
// restarted over the converged fleet makes no write to its objects (kube-apiserver's
// audit log of the operator's writes, read for the fleet's namespace).
func TestKilledOperatorConvergesFleetThenRestartIsFree(t *testing.T) {
	ns := suite.Namespace(t, "fleet")
	// The fleet is created paused; an operator that reconciles one App at a time is
	// started, the fleet resumed, and the operator killed as soon as the first
	// Deployments appear.
	suite.Apply(t, ns, clusterenv.PausedFleet(fleetSize, 80))
	if err := suite.StopOperator(); err != nil {
		t.Fatal(err)
	}
	// From here on the suite's operator is stopped, killed or runs with other flags: put it
	// back however the test ends, or every later test of the package fails for this one.
	t.Cleanup(func() { suite.EnsureOperatorServing(t) })
	watcher, err := kubernetes.NewForConfigOrDie(suite.Config).AppsV1().Deployments(ns).Watch(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer watcher.Stop()
	if err := suite.StartOperator(context.Background(), "--max-concurrent-reconciles=1"); err != nil {
		t.Fatal(err)
	}
	suite.MustRun(t, "annotate", "apps", "--all", "-n", ns, "mooring.dev/paused-")
	// Only creations count: a modification or an error event is not a new Deployment, and a
	// closed watch would otherwise yield zero values at once and pass for three.
	seen := 0
	deadline := time.After(time.Minute)
	for seen < 3 {
		select {
		case ev, ok := <-watcher.ResultChan():
			if !ok {
				t.Fatalf("the watch of Deployments closed after %d were created, want 3", seen)
			}
			if ev.Type == watch.Added {
				seen++
			}
		case <-deadline:
			t.Fatalf("saw %d Deployments created in a minute, want 3", seen)
		}
	}
	if err := syscall.Kill(suite.Operator.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = suite.StopOperator() // reaps the killed process
	done := count(t, ns, &appsv1.DeploymentList{})
	if done >= fleetSize {
		t.Fatalf("the operator finished all %d Deployments before it was killed; the test proves nothing", done)
	}
	t.Logf("killed the operator (SIGKILL) with %d of %d Deployments created", done, fleetSize)
	mark, err := suite.AuditMark()
	if err != nil {
		t.Fatal(err)
	}
	if err := suite.StartOperator(context.Background()); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	testutil.Eventually(t, 3*time.Minute, "all Apps Running", func() error {
		apps := &mooringv1.AppList{}
		if err := suite.Client.List(context.Background(), apps, client.InNamespace(ns)); err != nil {
			return err
		}
		running := 0
		for _, a := range apps.Items {
			if a.Status.Phase == mooringv1.AppRunning && a.Status.ObservedGeneration == a.Generation {
				running++
			}
		}
		if running != fleetSize {
			return fmt.Errorf("%d of %d Running", running, fleetSize)
		}
		return nil
	})
	t.Logf("fleet converged %s after the restart", time.Since(start).Round(100*time.Millisecond))
	assertOneSetOfChildren(t, ns)
	// The audit log must see the writes that finished the fleet, or its "no write" below
	// would prove nothing.
	converging, err := suite.OperatorWrites(mark, ns)
	if err != nil {
		t.Fatal(err)
	}
	created := countPrefix(converging, "create deployments ")
	if created == 0 {
		t.Fatalf("the audit log shows no Deployment created in %s after the restart (%d writes there), want the %d missing ones", ns, len(converging), fleetSize-done)
	}
	t.Logf("the audit log saw %d writes to %s while the fleet converged, %d of them Deployment creations", len(converging), ns, created)

	// Restart over the converged fleet: reads only. The operator's writes are counted for
	// this namespace only: it reconciles every other test's objects too, whose state is
	// not this test's to assert.
	if err := suite.StopOperator(); err != nil {
		t.Fatal(err)
	}
	if mark, err = suite.AuditMark(); err != nil {
		t.Fatal(err)
	}
	if err := suite.StartOperator(context.Background()); err != nil {
		t.Fatal(err)
	}
	// It reconciles the other tests' Apps too: only as many successes as there are Apps in
	// the cluster make it likely that the fleet's were among them.
	all := count(t, "", &mooringv1.AppList{})
	testutil.Eventually(t, time.Minute, fmt.Sprintf("the restarted operator to reconcile every App (%d in the cluster)", all), func() error {
		m, err := scrape()
		if err != nil {
			return err
		}
		if n := m[`controller_runtime_reconcile_total{controller="app",result="success"}`]; n < float64(all) {
			return fmt.Errorf("%v successful App reconciles", n)
		}
		return nil
	})
	m, err := scrape()
	if err != nil {
		t.Fatal(err)
	}
	writes, err := suite.OperatorWrites(mark, ns)
	if err != nil {
		t.Fatal(err)
	}
	if len(writes) > 0 {
		t.Fatalf("restart over converged Apps wrote %d times to objects of %s, want 0: %v", len(writes), ns, writes)
	}
	t.Logf("restart over %d converged Apps: %v successful reconciles, 0 writes to %s", fleetSize,
		m[`controller_runtime_reconcile_total{controller="app",result="success"}`], ns)
}

// countPrefix counts the strings of list that begin with prefix.
func countPrefix(list []string, prefix string) int {
	n := 0
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			n++
		}
	}
	return n
}

func count(t *testing.T, ns string, list client.ObjectList) int {
	t.Helper()
	if err := suite.Client.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	return meta.LenList(list)
}

// assertOneSetOfChildren checks every App has exactly its Deployment, Service and
// ConfigMap, each controlled by it, one ReplicaSet per Deployment, and no orphans.
func assertOneSetOfChildren(t *testing.T, ns string) {
	t.Helper()
	suite.AssertOneChildEach(t, ns, &appsv1.DeploymentList{}, &corev1.ServiceList{}, &corev1.ConfigMapList{})
}

// scrape reads the operator's Prometheus metrics as "name{labels}" → value.
func scrape() (map[string]float64, error) { return clusterenv.Scrape(suite.Operator.MetricsAddr) }
