package metrics

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/api/v1beta1"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

var t0 = time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)

// fixtures are one object of every kind, in the states the metrics distinguish.
func fixtures() []client.Object {
	ready := func(s metav1.ConditionStatus) []metav1.Condition {
		return []metav1.Condition{{Type: "Ready", Status: s, Reason: "R", LastTransitionTime: metav1.NewTime(t0)}}
	}
	return []client.Object{
		&mooringv1.App{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"},
			Spec:       mooringv1.AppSpec{Image: "nginx", Replicas: ptr.To[int32](3)},
			Status:     mooringv1.AppStatus{Phase: mooringv1.AppNotReady, AvailableReplicas: 2, Conditions: ready(metav1.ConditionFalse)},
		},
		// Autoscaled: the autoscaler wants 7 although spec.replicas (frozen while
		// spec.autoscaling is set) still says 2.
		&mooringv1.App{
			ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: "shop"},
			Spec: mooringv1.AppSpec{Image: "api", Replicas: ptr.To[int32](2),
				Autoscaling: &mooringv1.AppAutoscaling{MinReplicas: ptr.To[int32](2), MaxReplicas: 10}},
			Status: mooringv1.AppStatus{Phase: mooringv1.AppRunning, DesiredReplicas: 7, AvailableReplicas: 7, Conditions: ready(metav1.ConditionTrue)},
		},
		&mooringv1.CacheInstance{
			ObjectMeta: metav1.ObjectMeta{Name: "sessions", Namespace: "shop",
				Annotations: map[string]string{mooringv1.PausedAnnotation: "true"}},
			Status: mooringv1.CacheInstanceStatus{Phase: mooringv1.CacheInstanceRunning, AvailableReplicas: 1, Conditions: ready(metav1.ConditionTrue)},
		},
		&v1beta1.DatabaseCluster{
			ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: "shop", CreationTimestamp: metav1.NewTime(t0.Add(-30 * 24 * time.Hour))},
			Spec:       v1beta1.DatabaseClusterSpec{ReplicaCount: 2},
			Status:     v1beta1.DatabaseClusterStatus{Phase: v1beta1.DatabaseRunning, ReadyReplicas: 2, Conditions: ready(metav1.ConditionTrue)},
		},
		// Never backed up: its backup age counts from its creation.
		&v1beta1.DatabaseCluster{
			ObjectMeta: metav1.ObjectMeta{Name: "archive", Namespace: "shop", CreationTimestamp: metav1.NewTime(t0.Add(-48 * time.Hour))},
			Status:     v1beta1.DatabaseClusterStatus{Phase: v1beta1.DatabaseRunning, ReadyReplicas: 1, Conditions: ready(metav1.ConditionTrue)},
		},
		&mooringv1.Backup{
			ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "shop"},
			Spec:       mooringv1.BackupSpec{Schedule: "0 3 * * *", DatabaseRef: mooringv1.DatabaseReference{Name: "orders"}},
			Status: mooringv1.BackupStatus{Phase: mooringv1.BackupScheduled,
				LastSuccessfulTime: &metav1.Time{Time: t0.Add(5 * time.Minute)},
				LastFailedTime:     &metav1.Time{Time: t0.Add(-24 * time.Hour).Add(4 * time.Minute)}},
		},
		&mooringv1.Backup{
			ObjectMeta: metav1.ObjectMeta{Name: "weekly", Namespace: "shop"},
			Spec:       mooringv1.BackupSpec{Schedule: "0 4 * * 0", Suspend: true, DatabaseRef: mooringv1.DatabaseReference{Name: "orders"}},
			Status: mooringv1.BackupStatus{Phase: mooringv1.BackupSuspended,
				LastSuccessfulTime: &metav1.Time{Time: t0.Add(-7 * 24 * time.Hour)}},
		},
	}
}

func newCollector(leading bool, objs ...client.Object) *ResourceCollector {
	// The manager's scheme would import this package's importer; these two suffice.
	scheme := runtime.NewScheme()
	if err := mooringv1.AddToScheme(scheme); err != nil {
		panic(err)
	}
	if err := v1beta1.AddToScheme(scheme); err != nil {
		panic(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
	return NewResourceCollector(c, func() bool { return leading }, logr.Discard())
}

// TestGoldenExposition pins the exposition text of every resource series; run with
// -update after an intended change and review the diff.
func TestGoldenExposition(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(newCollector(true, fixtures()...))
	golden := filepath.Join("testdata", "resources.golden")
	if *update {
		families, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		for _, f := range families {
			if _, err := expfmt.MetricFamilyToText(&buf, f); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("read golden file (run with -update to create it): %v", err)
	}
	if err := testutil.GatherAndCompare(reg, bytes.NewReader(want)); err != nil {
		t.Fatal(err)
	}
	// The golden file is not trusted blindly: the facts an alert depends on are checked.
	for _, line := range []string{
		`mooring_backup_next_schedule_timestamp_seconds{name="nightly",namespace="shop"} 1.7961804e+09`, // 2026-12-02T03:00Z, the run after the last success
		`mooring_backup_deadline_timestamp_seconds{name="nightly",namespace="shop"} 1.7962668e+09`,      // 2026-12-03T03:00Z, the run after that
		`mooring_resource_condition{kind="App",name="web",namespace="shop",status="False",type="Ready"} 1`,
		`mooring_resource_paused{kind="CacheInstance",name="sessions",namespace="shop"} 1`,
		`mooring_resource_replicas{kind="DatabaseCluster",name="orders",namespace="shop"} 2`,
		`mooring_resource_replicas{kind="App",name="api",namespace="shop"} 7`, // the autoscaler's count, not spec.replicas
		`mooring_backup_suspended{name="nightly",namespace="shop"} 0`,
		`mooring_backup_suspended{name="weekly",namespace="shop"} 1`,
		// The newest success of its two Backups (nightly's, 2026-12-01T03:05Z, not weekly's).
		`mooring_database_last_backup_timestamp_seconds{name="orders",namespace="shop"} 1.7960943e+09`,
		// None: its creation, 2026-11-29T03:00Z.
		`mooring_database_last_backup_timestamp_seconds{name="archive",namespace="shop"} 1.7959212e+09`,
	} {
		if !strings.Contains(string(want), line+"\n") {
			t.Errorf("golden exposition lacks %s", line)
		}
	}
}

func TestGatherAndLintClean(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(newCollector(true, fixtures()...), NewBuildInfo("v1.0.0", "abc"),
		certExpiry{path: writeCert(t, t0.Add(90*24*time.Hour))})
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
	if n, err := testutil.GatherAndCount(reg); err != nil || n == 0 {
		t.Fatalf("gathered %d series (err %v), want some", n, err)
	}
}

func TestNotLeadingEmitsNothing(t *testing.T) {
	if n := testutil.CollectAndCount(newCollector(false, fixtures()...)); n != 0 {
		t.Fatalf("a replica that is not leading emitted %d series, want 0", n)
	}
}

func TestNextDue(t *testing.T) {
	created := metav1.NewTime(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	tests := map[string]struct {
		mutate func(*mooringv1.Backup)
		want   time.Time
	}{
		"before the first success, after creation": {want: time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)},
		"after the last success": {
			mutate: func(b *mooringv1.Backup) {
				b.Status.LastSuccessfulTime = &metav1.Time{Time: time.Date(2026, 12, 5, 3, 2, 0, 0, time.UTC)}
			},
			want: time.Date(2026, 12, 6, 3, 0, 0, 0, time.UTC),
		},
		"hourly":    {mutate: func(b *mooringv1.Backup) { b.Spec.Schedule = "@hourly" }, want: created.Add(time.Hour)},
		"suspended": {mutate: func(b *mooringv1.Backup) { b.Spec.Suspend = true }},
		"paused": {mutate: func(b *mooringv1.Backup) {
			b.Annotations = map[string]string{mooringv1.PausedAnnotation: "true"}
		}},
		"unparseable": {mutate: func(b *mooringv1.Backup) { b.Spec.Schedule = "sometimes" }},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			b := &mooringv1.Backup{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: created},
				Spec: mooringv1.BackupSpec{Schedule: "0 3 * * *"}}
			if tt.mutate != nil {
				tt.mutate(b)
			}
			if got := NextDue(b); !got.Equal(tt.want) {
				t.Errorf("NextDue = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestDeadline: a Backup is overdue only once a second run of its schedule has passed
// without a success, so a slow but healthy run is not, and a run that fails every night is.
func TestDeadline(t *testing.T) {
	created := metav1.NewTime(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	day := func(d, h, m int) time.Time { return time.Date(2026, 12, d, h, m, 0, 0, time.UTC) }
	tests := map[string]struct {
		mutate func(*mooringv1.Backup)
		want   time.Time
	}{
		"before the first success, two runs after creation": {want: day(3, 3, 0)},
		// The 03:00 run took 70 minutes: the next two runs are still ahead.
		"after a run that took 70 minutes": {
			mutate: func(b *mooringv1.Backup) { b.Status.LastSuccessfulTime = &metav1.Time{Time: day(5, 4, 10)} },
			want:   day(7, 3, 0),
		},
		// Failures do not move it: the last success counts, so failing every night ends
		// past it.
		"failing since a success": {
			mutate: func(b *mooringv1.Backup) {
				b.Status.LastSuccessfulTime = &metav1.Time{Time: day(5, 3, 5)}
				b.Status.LastFailedTime = &metav1.Time{Time: day(8, 3, 5)}
			},
			want: day(7, 3, 0),
		},
		"hourly":    {mutate: func(b *mooringv1.Backup) { b.Spec.Schedule = "@hourly" }, want: created.Add(2 * time.Hour)},
		"suspended": {mutate: func(b *mooringv1.Backup) { b.Spec.Suspend = true }},
		"paused": {mutate: func(b *mooringv1.Backup) {
			b.Annotations = map[string]string{mooringv1.PausedAnnotation: "true"}
		}},
		"unparseable": {mutate: func(b *mooringv1.Backup) { b.Spec.Schedule = "sometimes" }},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			b := &mooringv1.Backup{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: created},
				Spec: mooringv1.BackupSpec{Schedule: "0 3 * * *"}}
			if tt.mutate != nil {
				tt.mutate(b)
			}
			if got := Deadline(b); !got.Equal(tt.want) {
				t.Errorf("Deadline = %v, want %v", got, tt.want)
			}
		})
	}
}
