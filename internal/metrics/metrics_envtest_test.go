package metrics_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/internal/manager"
	"github.com/mooringhq/mooring/internal/metrics"
	"github.com/mooringhq/mooring/internal/testutil"
)

var env *testutil.Env

func TestMain(m *testing.M) { testutil.Main(m, func(e *testutil.Env) { env = e }) }

// resourceSeries returns the mooring_resource_* series in g about objects in namespace ns
// (every namespace when ns is empty), as "name{labels}" strings.
func resourceSeries(t *testing.T, g prometheus.Gatherer, ns string) []string {
	t.Helper()
	families, err := g.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	var out []string
	for _, f := range families {
		if !strings.HasPrefix(f.GetName(), "mooring_resource_") && !strings.HasPrefix(f.GetName(), "mooring_backup_") {
			continue
		}
		for _, m := range f.GetMetric() {
			if ns != "" && label(m, "namespace") != ns {
				continue
			}
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, l.GetName()+"="+l.GetValue())
			}
			out = append(out, f.GetName()+"{"+strings.Join(ls, ",")+"}")
		}
	}
	return out
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func createApp(t *testing.T, ns, name string) *mooringv1.App {
	t.Helper()
	a := &mooringv1.App{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: mooringv1.AppSpec{Image: "nginx:1.27", Replicas: ptr.To[int32](2)}}
	if err := env.Client.Create(context.Background(), a); err != nil {
		t.Fatalf("create App: %v", err)
	}
	return a
}

// TestDeletedObjectSeriesDisappear runs against the operator's own manager and registry
// (controller-runtime's), as shipped.
func TestDeletedObjectSeriesDisappear(t *testing.T) {
	ns := env.Namespace(t)
	a := createApp(t, ns, "web")
	testutil.Eventually(t, testutil.DefaultTimeout, "App web's series with its phase and Ready condition", func() error {
		got := strings.Join(resourceSeries(t, ctrlmetrics.Registry, ns), "\n")
		for _, want := range []string{"mooring_resource_info{kind=App,name=web,namespace=" + ns + ",phase=Pending}",
			"mooring_resource_replicas{", "mooring_resource_condition{kind=App,name=web,namespace=" + ns + ",status=False,type=Ready}"} {
			if !strings.Contains(got, want) {
				return fmt.Errorf("no %s in:\n%s", want, got)
			}
		}
		return nil
	})
	if err := env.Client.Delete(context.Background(), a); err != nil {
		t.Fatalf("delete App: %v", err)
	}
	testutil.Eventually(t, testutil.DefaultTimeout, "no series about the deleted App", func() error {
		if got := resourceSeries(t, ctrlmetrics.Registry, ns); len(got) > 0 {
			return fmt.Errorf("still %d series: %v", len(got), got)
		}
		return nil
	})
}

// startReplica starts a manager as a second operator replica would: leader election on the
// lease "id", Mooring's collectors in a registry of its own. It returns the registry,
// the manager and a function that stops it.
func startReplica(t *testing.T, id string) (*prometheus.Registry, ctrl.Manager, func()) {
	t.Helper()
	lease, renew, retry := 4*time.Second, 3*time.Second, 200*time.Millisecond
	mgr, err := manager.New(env.Config, ctrl.Options{
		Metrics:                       metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:        "0",
		LeaderElection:                true,
		LeaderElectionID:              id,
		LeaderElectionNamespace:       "default",
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &lease, RenewDeadline: &renew, RetryPeriod: &retry,
	})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	if err := metrics.Add(mgr, metrics.Options{Registerer: reg}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	stop := func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager %s stopped with: %v", id, err)
		}
	}
	t.Cleanup(func() {
		if ctx.Err() == nil {
			stop()
		}
	})
	return reg, mgr, stop
}

func TestOnlyTheLeaderEmitsResourceSeries(t *testing.T) {
	ns := env.Namespace(t)
	createApp(t, ns, "web")
	lease := "metrics-" + ns

	leaderReg, _, stopLeader := startReplica(t, lease)
	testutil.Eventually(t, testutil.DefaultTimeout, "the first replica to lead and report App web", func() error {
		if got := resourceSeries(t, leaderReg, ns); len(got) == 0 {
			return fmt.Errorf("no resource series yet")
		}
		return nil
	})

	followerReg, follower, _ := startReplica(t, lease)
	testutil.Eventually(t, testutil.DefaultTimeout, "the second replica's collectors to run (mooring_build_info)", func() error {
		families, err := followerReg.Gather()
		if err != nil {
			return err
		}
		for _, f := range families {
			if f.GetName() == "mooring_build_info" {
				return nil
			}
		}
		return fmt.Errorf("no mooring_build_info among %d families", len(families))
	})
	select {
	case <-follower.Elected():
		t.Fatal("the second replica was elected while the first held the lease")
	default:
	}
	if got := resourceSeries(t, followerReg, ""); len(got) != 0 {
		t.Fatalf("a replica that is not the leader emitted %d resource series: %v", len(got), got)
	}

	// The follower's silence is leadership, not a broken collector: once the leader steps
	// down, the follower takes over and reports the same App.
	stopLeader()
	testutil.Eventually(t, testutil.DefaultTimeout, "the second replica to take over and report App web", func() error {
		if got := resourceSeries(t, followerReg, ns); len(got) == 0 {
			return fmt.Errorf("no resource series from the new leader")
		}
		return nil
	})
	if got := resourceSeries(t, leaderReg, ""); len(got) != 0 {
		t.Fatalf("the replica that stepped down still emits %d resource series", len(got))
	}
}
