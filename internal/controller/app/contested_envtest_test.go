package app_test

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/internal/apimetrics"
	"github.com/mooringhq/mooring/internal/controller/app"
	"github.com/mooringhq/mooring/internal/engine"
	"github.com/mooringhq/mooring/internal/testutil"
)

// contestBackoff is the backoff of contested fields in this package's manager (set in
// TestMain): the production one (10 s doubling to 5 min, a quiet minute) divided so that
// a whole fight, and its end, fits in a test of seconds.
var contestBackoff = engine.ContestBackoff{Initial: time.Second, Max: 4 * time.Second, Quiet: 3 * time.Second}

// Another field manager sets the App's Deployment's spec.replicas 60 times, four times a
// second (an autoscaler Mooring does not know, a script): Mooring restores the field with
// backoff instead of after every change, says so once per backoff window in a Warning
// event and the Contested condition naming the field and the manager, and once the other
// writer stops the Deployment is back to spec.replicas and the condition is gone.
func TestContestedReplicasAreRestoredWithBackoff(t *testing.T) {
	const writer, patches, every = "replica-script", 60, 250 * time.Millisecond
	ns := env.Namespace(t)
	a := createApp(t, ns, "contested", nil) // 2 replicas
	key := client.ObjectKeyFromObject(a)
	testutil.WaitFor(t, env.Client, key, &appsv1.Deployment{}, "Deployment with 2 replicas", func(d *appsv1.Deployment) error {
		if *d.Spec.Replicas != 2 {
			return fmt.Errorf("replicas %d", *d.Spec.Replicas)
		}
		return nil
	})
	testutil.Settle(t)
	before, reconciles := apimetrics.Snapshot(), testutil.ReconcileCount(t, app.Component)
	seen := map[string]bool{}
	for _, e := range appEvents(t, ns, key.Name) {
		seen[e.Name] = true
	}
	start := time.Now()

	// Each patch changes the value (3, 4, 3, ...), so each is a change Mooring sees.
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: ns}}
	var contested *metav1.Condition
	pace := time.NewTicker(every) // the other writer's pace, not a wait for Mooring
	defer pace.Stop()
	for i := range patches {
		<-pace.C
		patch := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, 3+i%2))
		if err := env.Client.Patch(ctx, d, patch, client.FieldOwner(writer)); err != nil {
			t.Fatalf("patch %d: %v", i, err)
		}
		if contested == nil {
			contested = contestedCondition(t, key)
		}
	}
	fought := time.Since(start)

	// The condition said who and what while the fight went on.
	if contested == nil {
		t.Errorf("no Contested condition on the App during %s of changes", fought.Round(time.Millisecond))
	} else if !strings.Contains(contested.Message, "Deployment "+ns+"/contested field spec.replicas") ||
		!strings.Contains(contested.Message, `"`+writer+`"`) || contested.Reason != mooringv1.ReasonOtherWriter {
		t.Errorf("Contested condition %+v does not name the field and the manager", contested)
	}
	// Once the writer stops, the desired state wins and the fight is declared over.
	testutil.WaitFor(t, env.Client, key, &appsv1.Deployment{}, "replicas restored to spec.replicas", func(d *appsv1.Deployment) error {
		if *d.Spec.Replicas != 2 {
			return fmt.Errorf("replicas %d", *d.Spec.Replicas)
		}
		return nil
	})
	testutil.WaitFor(t, env.Client, key, &mooringv1.App{}, "Contested condition cleared", func(a *mooringv1.App) error {
		if c := meta.FindStatusCondition(a.Status.Conditions, mooringv1.ConditionContested); c != nil {
			return fmt.Errorf("Contested %s: %s", c.Status, c.Message)
		}
		return nil
	})
	testutil.Settle(t)
	total := time.Since(start)

	writes := apimetrics.Writes(before, apimetrics.Snapshot())
	deploymentWrites := writes[apimetrics.Key{Method: http.MethodPatch, Resource: "deployments"}]
	statusWrites := writes[apimetrics.Key{Method: http.MethodPatch, Resource: "apps/status"}]
	var warnings, events []string
	testutil.Eventually(t, 10*time.Second, "a ContestedField event", func() error {
		warnings, events = nil, nil
		for _, e := range appEvents(t, ns, key.Name) {
			if seen[e.Name] {
				continue
			}
			events = append(events, e.Reason)
			if e.Type == corev1.EventTypeWarning && e.Reason == engine.EventContestedField {
				warnings = append(warnings, e.Note)
			}
		}
		if len(warnings) == 0 {
			return errors.New("none yet")
		}
		return nil
	})
	t.Logf("%d changes of spec.replicas by %q in %s; until the fight was over (%s): %v Deployment writes, %v App status writes, %d events (%d ContestedField), %v reconciles; all writes %v",
		patches, writer, fought.Round(time.Millisecond), total.Round(time.Millisecond), deploymentWrites, statusWrites,
		len(events), len(warnings), testutil.ReconcileCount(t, app.Component)-reconciles, writes)
	t.Logf("last ContestedField event: %s", warnings[len(warnings)-1])

	// Without backoff each change costs a Deployment write (61 measured). With it: one
	// restore at once, then one per window (1, 2, then 4 s each) while the changes go on,
	// and one more for the last change: 7 for 15 s of changes. A loaded machine that
	// slows the writer down makes the fight, and the bound, longer.
	restores := 4 + float64(fought/contestBackoff.Max)
	if deploymentWrites > restores+1 {
		t.Errorf("%v Deployment writes for %d changes in %s, want at most %v", deploymentWrites, patches, fought, restores+1)
	}
	// Status changes with the Contested condition: once per window, and once to clear it.
	if statusWrites > restores+2 {
		t.Errorf("%v App status writes, want at most %v", statusWrites, restores+2)
	}
	// One ContestedField event per window, and the Updated event of the first restore.
	if maxEvents := int(restores) + 2; len(events) > maxEvents {
		t.Errorf("%d events, want at most %d: %v", len(events), maxEvents, events)
	}
	if !strings.Contains(warnings[0], "field spec.replicas is also written by field manager \""+writer+"\"") {
		t.Errorf("ContestedField event %q does not name the field and the manager", warnings[0])
	}
}

// contestedCondition returns the App's Contested condition, nil when it has none.
func contestedCondition(t *testing.T, key types.NamespacedName) *metav1.Condition {
	t.Helper()
	a := &mooringv1.App{}
	if err := env.Client.Get(ctx, key, a); err != nil {
		t.Fatal(err)
	}
	return meta.FindStatusCondition(a.Status.Conditions, mooringv1.ConditionContested)
}
