package app_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/internal/engine"
	"github.com/mooringhq/mooring/internal/testutil"
)

// These tests pin what the engine does for speed (docs/performance.md) without giving up
// correctness: children are created with a plain create, yet Mooring's server-side apply
// ownership stays exact, so a field dropped from the desired object is still pruned.

// mooringEntries returns the operations of Mooring's managedFields entries on the main
// resource, e.g. ["Update"] right after a create.
func mooringEntries(obj client.Object) []string {
	var ops []string
	for _, e := range obj.GetManagedFields() {
		if e.Manager == engine.FieldOwner && e.Subresource == "" {
			ops = append(ops, string(e.Operation))
		}
	}
	return ops
}

func TestCreatedChildIsPrunedLikeAnAppliedOne(t *testing.T) {
	ns := env.Namespace(t)
	a := createApp(t, ns, "owned", func(a *mooringv1.App) { a.Spec.Port = ptr.To[int32](8080) })
	key := client.ObjectKeyFromObject(a)
	testutil.WaitFor(t, env.Client, key, &appsv1.Deployment{}, "Deployment created with a plain create and marked for the ownership conversion", func(d *appsv1.Deployment) error {
		if got := d.Annotations[mooringv1.FieldOwnershipAnnotation]; got != "created" {
			return fmt.Errorf("annotation %s=%q", mooringv1.FieldOwnershipAnnotation, got)
		}
		if ops := mooringEntries(d); len(ops) != 1 || ops[0] != string(metav1.ManagedFieldsOperationUpdate) {
			return fmt.Errorf("mooring's managedFields entries %v, want [Update]", ops)
		}
		return nil
	})

	// Dropping the port removes the container port the create set: only an Apply entry
	// that owns it lets server-side apply prune it. Nobody else wrote the Deployment, so
	// the conversion takes the one-request path that renames the create's entry.
	renamed, read := conversions(t, "Deployment", "renamed"), conversions(t, "Deployment", "read")
	updateApp(t, key, func(a *mooringv1.App) { a.Spec.Port = nil })
	waitPortPrunedAndConverted(t, key)
	if got, want := conversions(t, "Deployment", "renamed")-renamed, 1.0; got != want {
		t.Errorf("Deployment conversions by rename: %v, want %v", got, want)
	}
	if got := conversions(t, "Deployment", "read") - read; got != 0 {
		t.Errorf("Deployment conversions by read: %v, want 0", got)
	}
}

// When another manager's entry comes first in managedFields (here an Apply entry, which
// the API server sorts before every Update entry), the one-request rename misses and the
// conversion reads the managedFields instead; pruning is as exact, and the other
// manager's field stays.
func TestOwnershipConversionFallsBackToReading(t *testing.T) {
	ns := env.Namespace(t)
	a := createApp(t, ns, "shared", func(a *mooringv1.App) { a.Spec.Port = ptr.To[int32](8080) })
	key := client.ObjectKeyFromObject(a)
	testutil.WaitFor(t, env.Client, key, &appsv1.Deployment{}, "Deployment created and marked for the ownership conversion", func(d *appsv1.Deployment) error {
		if d.Annotations[mooringv1.FieldOwnershipAnnotation] != "created" {
			return fmt.Errorf("annotations %v", d.Annotations)
		}
		return nil
	})
	label := &unstructured.Unstructured{}
	label.SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind("Deployment"))
	label.SetName(key.Name)
	label.SetNamespace(key.Namespace)
	label.SetLabels(map[string]string{"team": "checkout"})
	if err := env.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(label), client.FieldOwner("team-tool")); err != nil {
		t.Fatal(err)
	}

	renamed, read := conversions(t, "Deployment", "renamed"), conversions(t, "Deployment", "read")
	updateApp(t, key, func(a *mooringv1.App) { a.Spec.Port = nil })
	d := waitPortPrunedAndConverted(t, key)
	if d.Labels["team"] != "checkout" {
		t.Errorf("the other manager's label was lost: labels %v", d.Labels)
	}
	if got := conversions(t, "Deployment", "renamed") - renamed; got != 0 {
		t.Errorf("Deployment conversions by rename: %v, want 0 (team-tool's entry comes first)", got)
	}
	if got, want := conversions(t, "Deployment", "read")-read, 1.0; got != want {
		t.Errorf("Deployment conversions by read: %v, want %v", got, want)
	}
}

// waitPortPrunedAndConverted waits until the Deployment of key has no container port, no
// FieldOwnershipAnnotation and a single Apply entry of Mooring's, and returns it.
func waitPortPrunedAndConverted(t *testing.T, key client.ObjectKey) *appsv1.Deployment {
	t.Helper()
	d := &appsv1.Deployment{}
	testutil.WaitFor(t, env.Client, key, d, "container port pruned, ownership converted to Apply", func(d *appsv1.Deployment) error {
		if ports := d.Spec.Template.Spec.Containers[0].Ports; len(ports) != 0 {
			return fmt.Errorf("ports %v", ports)
		}
		if _, ok := d.Annotations[mooringv1.FieldOwnershipAnnotation]; ok {
			return fmt.Errorf("annotation %s still set", mooringv1.FieldOwnershipAnnotation)
		}
		if ops := mooringEntries(d); len(ops) != 1 || ops[0] != string(metav1.ManagedFieldsOperationApply) {
			return fmt.Errorf("mooring's managedFields entries %v, want [Apply]", ops)
		}
		return nil
	})
	return d
}

// conversions reads mooring_child_ownership_conversions_total for kind and path from the
// registry the in-process manager reports to.
func conversions(t *testing.T, kind, path string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "mooring_child_ownership_conversions_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["kind"] == kind && labels["path"] == path {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// An object of a child's name that Mooring does not label is not in its cache: the
// create fails with AlreadyExists, and the App reports the conflict instead of taking the
// object over.
func TestForeignObjectOutsideTheCacheIsNotTakenOver(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	foreign := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "taken", Namespace: ns, Labels: map[string]string{"team": "other"}},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "web", Port: 9999}}},
	}
	if err := env.Client.Create(ctx, foreign); err != nil {
		t.Fatal(err)
	}
	a := createApp(t, ns, "taken", func(a *mooringv1.App) { a.Spec.Port = ptr.To[int32](8080) })
	key := client.ObjectKeyFromObject(a)
	testutil.WaitFor(t, env.Client, key, &mooringv1.App{}, "App not Ready, naming the Service that is in the way", func(a *mooringv1.App) error {
		ready := meta.FindStatusCondition(a.Status.Conditions, mooringv1.ConditionReady)
		if ready == nil || ready.Status != metav1.ConditionFalse || ready.Reason != mooringv1.ReasonReconcileError ||
			!strings.Contains(ready.Message, "Service taken already exists and is not controlled") {
			return fmt.Errorf("Ready %+v", ready)
		}
		return nil
	})
	testutil.Eventually(t, 30*time.Second, "a Warning event naming the conflict", func() error {
		for _, e := range appEvents(t, ns, "taken") {
			if e.Type == corev1.EventTypeWarning && e.Reason == engine.EventReconcileError && strings.Contains(e.Note, "Service taken") {
				return nil
			}
		}
		return errors.New("no ReconcileError event yet")
	})
	svc := &corev1.Service{}
	if err := env.Client.Get(ctx, key, svc); err != nil {
		t.Fatal(err)
	}
	if len(svc.OwnerReferences) != 0 || svc.Labels[mooringv1.ManagedByLabel] != "" || svc.Spec.Ports[0].Port != 9999 {
		t.Fatalf("the foreign Service was changed: owners %v labels %v ports %v", svc.OwnerReferences, svc.Labels, svc.Spec.Ports)
	}
}

// A new App's children cost one event, not one per child.
func TestNewAppRecordsOneEventForItsChildren(t *testing.T) {
	ns := env.Namespace(t)
	createApp(t, ns, "evented", func(a *mooringv1.App) {
		a.Spec.Port = ptr.To[int32](8080)
		a.Spec.Config = "x=1"
	})
	var normal []eventsv1.Event
	testutil.Eventually(t, 30*time.Second, "one Created event naming the ConfigMap, Deployment and Service", func() error {
		normal = normal[:0]
		for _, e := range appEvents(t, ns, "evented") {
			if e.Type == corev1.EventTypeNormal {
				normal = append(normal, e)
			}
		}
		for _, e := range normal {
			if e.Reason == engine.EventCreated && strings.Contains(e.Note, "ConfigMap evented-config created") &&
				strings.Contains(e.Note, "Deployment evented created") && strings.Contains(e.Note, "Service evented created") {
				return nil
			}
		}
		return fmt.Errorf("Normal events so far: %v", notes(normal))
	})
	// The App converged with that one reconcile: no later Normal event may follow.
	testutil.Settle(t)
	normal = normal[:0]
	for _, e := range appEvents(t, ns, "evented") {
		if e.Type == corev1.EventTypeNormal {
			normal = append(normal, e)
		}
	}
	if len(normal) != 1 {
		t.Fatalf("want exactly one Normal event, got %v", notes(normal))
	}
}

func appEvents(t *testing.T, ns, name string) []eventsv1.Event {
	t.Helper()
	list := &eventsv1.EventList{}
	if err := env.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.Kind == "App" && e.Regarding.Name == name {
			out = append(out, e)
		}
	}
	return out
}

func notes(es []eventsv1.Event) []string {
	out := make([]string, 0, len(es))
	for _, e := range es {
		out = append(out, e.Reason+": "+e.Note)
	}
	return out
}

// A child the App controls but that Mooring's cache cannot see (its labels were removed by
// hand) makes the create fail with AlreadyExists; the engine finds it is the App's own and
// applies over it, which puts the labels and the desired spec back.
func TestOwnChildOutsideTheCacheIsAppliedOver(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	a := createApp(t, ns, "unlabelled", func(a *mooringv1.App) {
		a.Spec.Port = ptr.To[int32](8080)
		a.Annotations = map[string]string{mooringv1.PausedAnnotation: "true"}
	})
	key := client.ObjectKeyFromObject(a)
	if err := env.Client.Get(ctx, key, a); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "unlabelled", Namespace: ns, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: mooringv1.GroupVersion.String(), Kind: "App", Name: a.Name, UID: a.UID,
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
		}}},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "legacy", Port: 1234}}},
	}
	if err := env.Client.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	updateApp(t, key, func(a *mooringv1.App) { delete(a.Annotations, mooringv1.PausedAnnotation) })
	// The port the test's own create set stays: server-side apply leaves another
	// manager's fields alone.
	testutil.WaitFor(t, env.Client, key, &corev1.Service{}, "the App's own Service labelled and applied over", func(s *corev1.Service) error {
		ports := map[int32]bool{}
		for _, p := range s.Spec.Ports {
			ports[p.Port] = true
		}
		if s.Labels[mooringv1.ManagedByLabel] != mooringv1.ManagedBy || !ports[8080] {
			return fmt.Errorf("labels %v ports %v", s.Labels, s.Spec.Ports)
		}
		return nil
	})
	testutil.WaitFor(t, env.Client, key, &mooringv1.App{}, "App reconciled without an error", func(a *mooringv1.App) error {
		ready := meta.FindStatusCondition(a.Status.Conditions, mooringv1.ConditionReady)
		if a.Status.ObservedGeneration != a.Generation || ready == nil || ready.Reason == mooringv1.ReasonReconcileError {
			return fmt.Errorf("observedGeneration %d/%d Ready %+v", a.Status.ObservedGeneration, a.Generation, ready)
		}
		return nil
	})
}
