package engine

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Apply is for children whose whole desired state Mooring keeps. Some writes of the
// stateful kinds are not that: a generated Secret created once and never regenerated, a
// one-shot Job, a patch of one field of an object Mooring does not own (a PVC's size, a
// pod's role label), a deletion that must keep the pods or wait for them. CreateOnce,
// Patch and DeleteExact send those, and account for them as Apply accounts for a child:
// each is counted in mooring_child_operations_total, logged, announced to the own-write
// tracking (ownwrites.go) so that its watch event does not queue the owner again, and
// reported in the reconcile's one summary event or in an event of its own.

// WriteOption changes how CreateOnce, Patch and DeleteExact write and report.
type WriteOption func(*writeOptions)

type writeOptions struct {
	unowned bool
	silent  bool
	event   *announcement
}

type announcement struct{ eventType, reason, action, message string }

func writeOptionsOf(opts []WriteOption) writeOptions {
	var o writeOptions
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// Unowned creates the object without the owner reference and standard labels a child
// gets, as it is given: for what must outlive the reconciled object (its data's
// credentials, a volume of dumps) or must not go with it while it is being deleted (a
// finalizer's Job, which a foreground deletion would take away as soon as it exists).
func Unowned() WriteOption { return func(o *writeOptions) { o.unowned = true } }

// Announce reports the write, when it is made, with an event of its own instead of a
// line of the reconcile's summary event: for a write the user should read about in words
// of the kind ("Generated credentials Secret db-credentials").
func Announce(eventType, reason, action, message string) WriteOption {
	return func(o *writeOptions) { o.event = &announcement{eventType, reason, action, message} }
}

// Silent leaves the write out of the reconcile's events (it is still counted and
// logged): for writes the handler reports otherwise, once for many (a condition, one
// event for every volume it grew).
func Silent() WriteOption { return func(o *writeOptions) { o.silent = true } }

// wrote counts, logs and reports a write that CreateOnce, Patch or DeleteExact made.
func (s *Scope[T]) wrote(gvk schema.GroupVersionKind, obj client.Object, verb string, o writeOptions) {
	childWrites.WithLabelValues(gvk.Kind, verb).Inc()
	s.Log.Info("Wrote object", "kind", gvk.Kind, "object", klog.KObj(obj), "result", verb)
	switch {
	case o.event != nil:
		s.Event(o.event.eventType, o.event.reason, o.event.action, o.event.message)
	case !o.silent:
		s.changes = append(s.changes, change{kind: gvk.Kind, name: obj.GetName(), verb: verb})
	}
}
