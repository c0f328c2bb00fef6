package monitoring_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/api/v1beta1"
	"github.com/mooringhq/mooring/internal/instance"
	"github.com/mooringhq/mooring/internal/manager"
	"github.com/mooringhq/mooring/internal/testutil"
)

var env *testutil.Env

func TestMain(m *testing.M) { testutil.Main(m, func(e *testutil.Env) { env = e }) }

var (
	gatherOnce sync.Once
	gathered   []*dto.MetricFamily
	gatherErr  error
)

// families returns the operator's metric families after it did everything the alerts and
// dashboards look at. The work runs once per test binary.
func families(t *testing.T) []*dto.MetricFamily {
	t.Helper()
	env.Require(t) // skipped, not half-run, without bin/k8s
	gatherOnce.Do(func() {
		gatherErr = exercise(t)
		if gatherErr == nil {
			gathered, gatherErr = ctrlmetrics.Registry.Gather()
		}
	})
	if gatherErr != nil {
		t.Fatalf("exercise the operator: %v", gatherErr)
	}
	return gathered
}

// exercise drives the operator in envtest like a user: one object of every kind, a
// database made Running, a backup that succeeds and one that fails, and a second manager
// that wins a leader election (so its metrics exist too).
func exercise(t *testing.T) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	ctx := context.Background()
	ns := env.Namespace(t)
	c := env.Client
	objs := []client.Object{
		&mooringv1.App{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
			Spec: mooringv1.AppSpec{Image: "nginx:1.27", Replicas: ptr.To[int32](2)}},
		&mooringv1.CacheInstance{ObjectMeta: metav1.ObjectMeta{Name: "sessions", Namespace: ns}},
		&v1beta1.DatabaseCluster{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: ns},
			Spec: v1beta1.DatabaseClusterSpec{Engine: v1beta1.PostgreSQL, ReplicaCount: 1}},
		&mooringv1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: ns},
			Spec: mooringv1.BackupSpec{DatabaseRef: mooringv1.DatabaseReference{Name: "orders"}, Schedule: "0 3 * * *"}},
	}
	for _, o := range objs {
		if err := c.Create(ctx, o); err != nil {
			return fmt.Errorf("create %T: %w", o, err)
		}
	}
	testutil.MarkStatefulSetReady(t, c, client.ObjectKey{Namespace: ns, Name: "orders"})
	scaleApp(t, client.ObjectKey{Namespace: ns, Name: "web"})
	key := client.ObjectKey{Namespace: ns, Name: "nightly"}
	testutil.WaitFor(t, c, key, &mooringv1.Backup{}, "Backup scheduled", func(b *mooringv1.Backup) error {
		if b.Status.Phase != mooringv1.BackupScheduled {
			return fmt.Errorf("phase %q", b.Status.Phase)
		}
		return nil
	})
	for i, succeed := range []bool{true, false} {
		testutil.Update(t, c, key, &mooringv1.Backup{}, func(b *mooringv1.Backup) {
			metav1.SetMetaDataAnnotation(&b.ObjectMeta, mooringv1.BackupNowAnnotation, fmt.Sprint(i))
		})
		job := waitManualJob(t, ns, fmt.Sprint(i))
		testutil.FinishJob(t, c, job, succeed)
	}
	testutil.WaitFor(t, c, key, &mooringv1.Backup{}, "a last success and a later last failure", func(b *mooringv1.Backup) error {
		if b.Status.LastSuccessfulTime == nil || b.Status.LastFailedTime == nil {
			return fmt.Errorf("lastSuccessfulTime %v lastFailedTime %v", b.Status.LastSuccessfulTime, b.Status.LastFailedTime)
		}
		return nil
	})
	return electLeader(t)
}

// scaleApp waits for the App's Deployment, then changes the App's replicas and waits for
// the Deployment to follow. The first apply to a created child converts its field
// ownership, so mooring_child_ownership_conversions_total has a series to list.
func scaleApp(t *testing.T, key client.ObjectKey) {
	t.Helper()
	c := env.Client
	testutil.WaitFor(t, c, key, &appsv1.Deployment{}, "the App's Deployment", func(*appsv1.Deployment) error { return nil })
	testutil.Update(t, c, key, &mooringv1.App{}, func(a *mooringv1.App) { a.Spec.Replicas = ptr.To[int32](3) })
	testutil.WaitFor(t, c, key, &appsv1.Deployment{}, "the Deployment at 3 replicas", func(d *appsv1.Deployment) error {
		if r := ptr.Deref(d.Spec.Replicas, 0); r != 3 {
			return fmt.Errorf("replicas %d", r)
		}
		return nil
	})
}

// waitManualJob waits for the Job the backup-now value asked for.
func waitManualJob(t *testing.T, ns, value string) client.ObjectKey {
	t.Helper()
	var key client.ObjectKey
	testutil.Eventually(t, testutil.DefaultTimeout, "the Job for backup-now="+value, func() error {
		jobs := &batchv1.JobList{}
		if err := env.Client.List(context.Background(), jobs, client.InNamespace(ns)); err != nil {
			return err
		}
		var seen []string
		for _, j := range jobs.Items {
			if j.Annotations[mooringv1.BackupNowValueAnnotation] == value {
				key = client.ObjectKeyFromObject(&j)
				return nil
			}
			seen = append(seen, j.Name)
		}
		return fmt.Errorf("jobs %v", seen)
	})
	return key
}

// electLeader runs a manager with leader election until it leads, so that client-go's
// leader election metrics exist in the registry as they do in a deployed operator.
func electLeader(t *testing.T) error {
	lease, renew, retry := 4*time.Second, 3*time.Second, 200*time.Millisecond
	mgr, err := manager.New(env.Config, ctrl.Options{
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		LeaderElection: true, LeaderElectionID: "mooring.dev", LeaderElectionNamespace: "default",
		LeaderElectionReleaseOnCancel: true, LeaseDuration: &lease, RenewDeadline: &renew, RetryPeriod: &retry,
	})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	stopped := false
	defer func() {
		cancel()
		if !stopped {
			// Cancelled after the election: "leader election lost" is the expected ending.
			if err := <-done; err != nil {
				t.Logf("leader-election manager stopped: %v", err)
			}
		}
	}()
	select {
	case <-mgr.Elected():
		return nil
	case err := <-done:
		stopped = true
		return fmt.Errorf("manager stopped before it was elected: %w", err)
	case <-time.After(testutil.DefaultTimeout):
		return fmt.Errorf("not elected within %s", testutil.DefaultTimeout)
	}
}

// knownNames are the series names a query may use: every gathered family and every
// series of the instance managers' /metrics, with the
// _bucket/_sum/_count series of histograms and summaries, and Prometheus's own "up".
func knownNames(t *testing.T) map[string]bool {
	t.Helper()
	known := map[string]bool{"up": true}
	for _, f := range families(t) {
		addSeriesNames(known, f)
	}
	// The databases' own, which each database pod's instance manager serves.
	for _, name := range instance.MetricNames() {
		known[name] = true
	}
	return known
}

// addSeriesNames adds the names of the series of family f to known: its name, and the
// _bucket/_sum/_count series of a histogram or summary.
func addSeriesNames(known map[string]bool, f *dto.MetricFamily) {
	name := f.GetName()
	known[name] = true
	switch f.GetType() {
	case dto.MetricType_HISTOGRAM:
		known[name+"_bucket"], known[name+"_sum"], known[name+"_count"] = true, true, true
	case dto.MetricType_SUMMARY:
		known[name+"_sum"], known[name+"_count"] = true, true
	}
}

// unknown returns the names in used that are not in known, sorted.
func unknown(used []string, known map[string]bool) []string {
	var out []string
	for _, n := range used {
		if !known[n] {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// mooringFamilies are the names of Mooring's own families in the gathered registry.
func mooringFamilies(t *testing.T) []string {
	var out []string
	for _, f := range families(t) {
		if strings.HasPrefix(f.GetName(), "mooring_") {
			out = append(out, f.GetName())
		}
	}
	return out
}
