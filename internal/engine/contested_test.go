package engine

import (
	"reflect"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

var (
	deploymentGVK = appsv1.SchemeGroupVersion.WithKind("Deployment")
	webOwner      = types.NamespacedName{Namespace: "shop", Name: "web"}
	replicasPath  = []string{"spec", "replicas"}
	replicasKey   = fieldKey{deploymentGVK, "web", "spec.replicas"}
)

// fight plays a writer that changes the Deployment's spec.replicas every second (to a
// new value each time, as an autoscaler would) from second 0 to second until-1, and the
// engine reconciling on each change and whenever it asked to; it returns the seconds at
// which the engine restored the field and the reports it made.
func fight(t *testing.T, c *contests, clock *time.Time, until int, manager string) (restores []int, reports []string) {
	t.Helper()
	start := *clock
	drifted, rv, next := false, 0, time.Time{}
	reconcile := func(sec int) {
		if !drifted {
			if wait := c.calm(webOwner, deploymentGVK, "web"); wait > 0 {
				next = clock.Add(wait)
			} else {
				next = time.Time{}
			}
			return
		}
		p := c.observe(webOwner, deploymentGVK, "web", [][]string{replicasPath}, string(rune('a'+rv%26)))
		var managers map[fieldKey]fieldWriter
		if len(p.lookup) > 0 {
			managers = map[fieldKey]fieldWriter{replicasKey: {manager: manager}}
		}
		p, r := c.settle(p, managers)
		reports = append(reports, r...)
		if p.restore {
			restores = append(restores, sec)
			drifted = false
		}
		next = time.Time{}
		if p.wait > 0 {
			next = clock.Add(p.wait)
		}
	}
	for sec := 0; sec < until+400; sec++ {
		*clock = start.Add(time.Duration(sec) * time.Second)
		if sec < until {
			drifted, rv = true, rv+1 // the writer's change queues a reconcile
			reconcile(sec)
			continue
		}
		if !next.IsZero() && !clock.Before(next) {
			reconcile(sec) // the requeue the engine asked for
		}
	}
	return restores, reports
}

func TestContestedFieldIsRestoredWithBackoff(t *testing.T) {
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := newContests(ContestBackoff{Initial: 10 * time.Second, Max: 40 * time.Second, Quiet: time.Minute})
	c.now = func() time.Time { return clock }

	restores, reports := fight(t, c, &clock, 120, "replica-script")
	// At once, then after 10, 20, 40, 40 s; the last change (second 119) is restored when
	// its window ends, at 150.
	if want := []int{0, 10, 30, 70, 110, 150}; !reflect.DeepEqual(restores, want) {
		t.Errorf("restores at %v, want %v (120 changes without backoff)", restores, want)
	}
	// One report when the second change shows the fight, then one per window.
	if len(reports) != 6 {
		t.Fatalf("%d reports, want 6: %q", len(reports), reports)
	}
	for _, want := range []string{`Deployment shop/web field spec.replicas is also written by field manager "replica-script" (changed 2 times in 1s)`,
		"at most every 10s now"} {
		if !strings.Contains(reports[0], want) {
			t.Errorf("first report %q does not say %q", reports[0], want)
		}
	}
	if !strings.Contains(reports[4], "(changed 111 times in 1m50s)") || !strings.Contains(reports[4], "at most every 40s now") {
		t.Errorf("report at 110 s: %q", reports[4])
	}
	// The fight is over a window (the quiet minute) after the last restore: nothing is left.
	if msg := c.condition(webOwner); msg != "" {
		t.Errorf("condition after the fight: %q, want none", msg)
	}
	if len(c.byOwner) != 0 {
		t.Errorf("contests left: %v", c.byOwner)
	}

	// A later change is a first change again: restored at once, not reported.
	restores, reports = fight(t, c, &clock, 1, "replica-script")
	if !reflect.DeepEqual(restores, []int{0}) || len(reports) != 0 {
		t.Errorf("a single change after the fight: restores %v reports %q, want [0] and none", restores, reports)
	}
}

func TestContestConditionChangesOncePerWindow(t *testing.T) {
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := newContests(ContestBackoff{Initial: 10 * time.Second, Max: time.Minute, Quiet: time.Minute})
	c.now = func() time.Time { return clock }
	change := func(rv string) plan {
		clock = clock.Add(time.Second)
		p := c.observe(webOwner, deploymentGVK, "web", [][]string{replicasPath}, rv)
		var managers map[fieldKey]fieldWriter
		if len(p.lookup) > 0 {
			managers = map[fieldKey]fieldWriter{replicasKey: {manager: "kubectl-patch"}}
		}
		p, _ = c.settle(p, managers)
		return p
	}
	if p := change("1"); !p.restore {
		t.Fatal("a first change was not restored at once")
	}
	if p := change("2"); p.restore || p.wait != 9*time.Second {
		t.Fatalf("second change: restore %v wait %v, want it held for the rest of the 10 s window", p.restore, p.wait)
	}
	first := c.condition(webOwner)
	if !strings.Contains(first, "spec.replicas") || !strings.Contains(first, `"kubectl-patch"`) {
		t.Fatalf("condition %q does not name the field and the manager", first)
	}
	// More changes inside the window count, but do not change the message.
	for i := range 5 {
		if p := change(string(rune('A' + i))); p.restore {
			t.Fatalf("restored inside the window at %v", clock)
		}
	}
	if got := c.condition(webOwner); got != first {
		t.Errorf("condition changed inside a window: %q, then %q", first, got)
	}
	// The window's end restores and reports the count since the fight began.
	clock = clock.Add(3 * time.Second)
	if p := change("Z"); !p.restore {
		t.Fatal("not restored at the end of the window")
	}
	if got := c.condition(webOwner); got == first || !strings.Contains(got, "changed 8 times in 10s") || !strings.Contains(got, "at most every 20s") {
		t.Errorf("condition after the window: %q", got)
	}
}

// A field only Mooring owns that does not keep Mooring's value (a webhook rewrites it) is
// no fight: it is restored every time and never reported.
func TestDriftWithoutAnotherManagerIsNotContested(t *testing.T) {
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := newContests(DefaultContestBackoff)
	c.now = func() time.Time { return clock }
	for i := range 5 {
		clock = clock.Add(time.Second)
		p := c.observe(webOwner, deploymentGVK, "web", [][]string{replicasPath}, string(rune('a'+i)))
		p, reports := c.settle(p, map[fieldKey]fieldWriter{}) // nobody but Mooring owns it
		if !p.restore || len(reports) != 0 {
			t.Fatalf("change %d: restore %v reports %q, want a restore and no report", i, p.restore, reports)
		}
	}
	if msg := c.condition(webOwner); msg != "" {
		t.Errorf("condition %q, want none", msg)
	}
}

func TestChangedFields(t *testing.T) {
	want := map[string]any{
		"metadata": map[string]any{"labels": map[string]any{"app.kubernetes.io/name": "web"}},
		"spec": map[string]any{
			"replicas": int64(2),
			"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "app", "image": "nginx"}}}},
			"empty":    map[string]any{},
		},
	}
	have := map[string]any{
		"metadata": map[string]any{"labels": map[string]any{"app.kubernetes.io/name": "other"}},
		"spec": map[string]any{
			"replicas": int64(5),
			"paused":   true,
			"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "app", "image": "evil"}}}},
		},
	}
	got := changedFields(want, have, 10)
	wantPaths := [][]string{{"metadata", "labels", "app.kubernetes.io/name"}, {"spec", "replicas"}, {"spec", "template", "spec", "containers"}}
	if !reflect.DeepEqual(got, wantPaths) {
		t.Errorf("changedFields = %v, want %v", got, wantPaths)
	}
	if got := changedFields(want, have, 1); len(got) != 1 {
		t.Errorf("limit 1: %v", got)
	}
	if got := formatPath(wantPaths[0]); got != "metadata.labels[app.kubernetes.io/name]" {
		t.Errorf("formatPath = %q", got)
	}
}

func TestOtherManagers(t *testing.T) {
	at := func(sec int) *metav1.Time {
		return &metav1.Time{Time: time.Date(2026, 1, 1, 0, 0, sec, 0, time.UTC)}
	}
	fields := metav1.NewFieldsV1
	entries := []metav1.ManagedFieldsEntry{
		{Manager: FieldOwner, Operation: metav1.ManagedFieldsOperationApply, Time: at(0),
			FieldsV1: fields(`{"f:spec":{"f:selector":{},"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:image":{}}}}}}}`)},
		{Manager: "old-script", Operation: metav1.ManagedFieldsOperationUpdate, Time: at(1), FieldsV1: fields(`{"f:spec":{"f:replicas":{}}}`)},
		{Manager: "kubectl-patch", Operation: metav1.ManagedFieldsOperationUpdate, Time: at(2), FieldsV1: fields(`{"f:spec":{"f:replicas":{}}}`)},
		{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "scale", Time: at(3), FieldsV1: fields(`{"f:spec":{"f:paused":{}}}`)},
		{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", Time: at(4), FieldsV1: fields(`{"f:status":{"f:replicas":{}}}`)},
	}
	key := func(f string) fieldKey { return fieldKey{deploymentGVK, "web", f} }
	paths := map[fieldKey][]string{
		key("replicas"):   {"spec", "replicas"},
		key("containers"): {"spec", "template", "spec", "containers"},
		key("selector"):   {"spec", "selector", "matchLabels", "app"},
		key("paused"):     {"spec", "paused"},
		key("labels"):     {"metadata", "labels", "team"},
	}
	got := otherManagers(entries, paths)
	want := map[fieldKey]fieldWriter{
		key("replicas"): {manager: "kubectl-patch"},                 // the latest of two
		key("paused"):   {manager: "kubectl", subresource: "scale"}, // through a subresource
		key("labels"):   {},                                         // nobody's: removed
		// containers and selector (atomic) are Mooring's alone: absent.
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("otherManagers = %v, want %v", got, want)
	}
	for w, say := range map[fieldWriter]string{
		{manager: "kubectl", subresource: "scale"}: `field manager "kubectl" through the scale subresource`,
		{manager: "kubectl-patch"}:                 `field manager "kubectl-patch"`,
		{}:                                         "another writer",
	} {
		if got := w.String(); got != say {
			t.Errorf("%#v says %q, want %q", w, got, say)
		}
	}
}
