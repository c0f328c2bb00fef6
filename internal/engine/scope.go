package engine

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
)

// Scope is what one reconcile of one object works with. Handlers read and change
// Object (its status, mostly) and reach the cluster only through the scope's methods, so
// that applying, skipping unchanged children, pruning and events happen the same way for
// every kind.
type Scope[T Object] struct {
	// Object is the object being reconciled. Changes to its status are written once when
	// the reconcile ends.
	Object T
	// Client reads from the cache (only Mooring's own children are cached) and writes to
	// the API server. Write through Apply, Delete, CreateOnce, Patch and DeleteExact
	// rather than with it, so that every write is counted, tracked and reported.
	Client client.Client
	// Log carries the object's name and namespace.
	Log logr.Logger

	reader    client.Reader
	scheme    *runtime.Scheme
	recorder  recorder.EventRecorder
	component string
	applied   map[childKey]struct{}
	keepAll   bool
	optional  *optionalKinds
	onDemand  *onDemandWatches
	writes    *ownWrites
	trust     *trust
	// changes lists what this reconcile did to children ("Deployment web created"); the
	// engine reports them in one event when the reconcile ends.
	changes []change
	// contests tracks children's fields other writers keep changing (contested.go), and
	// requeueAfter is when the reconcile asks to run again because of them.
	contests     *contests
	requeueAfter time.Duration
}

// StartWatch starts the kind's on-demand watch of that name (Options.OnDemand) unless it
// runs already. Call it before reading what the watch covers, so that a change after the
// read is not missed.
func (s *Scope[T]) StartWatch(name string) error { return s.onDemand.start(name) }

// Served reports whether the API server serves obj's kind, one of the kind's optional
// children (Options.Optional). The first time it is, its cache and watch start.
func (s *Scope[T]) Served(ctx context.Context, obj client.Object) (bool, error) {
	gvk, err := apiutil.GVKForObject(obj, s.scheme)
	if err != nil {
		return false, err
	}
	if !s.optional.isOptional(gvk) {
		return true, nil
	}
	r, err := s.optional.reader(ctx, gvk)
	return r != nil, err
}

// liveReader is where the live copy of a child of kind gvk is read: the manager's cache,
// or the optional kind's own.
func (s *Scope[T]) liveReader(ctx context.Context, gvk schema.GroupVersionKind) (client.Reader, error) {
	if !s.optional.isOptional(gvk) {
		return s.Client, nil
	}
	r, err := s.optional.reader(ctx, gvk)
	if err != nil {
		return nil, err
	}
	if r == nil {
		return nil, fmt.Errorf("%s is not served by the API server; check Scope.Served before applying it", gvk.Kind)
	}
	return r, nil
}

// KeepChildren tells the engine that this reconcile did not apply the whole desired state
// (it waits for something, such as a Secret), so children that were not applied are not
// stale and must not be pruned.
func (s *Scope[T]) KeepChildren() { s.keepAll = true }

type childKey struct {
	gvk  schema.GroupVersionKind
	name string
}

// Keep leaves the existing child obj as it is: it is neither applied nor pruned by this
// reconcile. A kind keeps a child it must not change behind its owner's back (a
// DatabaseCluster's StatefulSet of an earlier release, whose pods the new template
// could not run on the old data).
func (s *Scope[T]) Keep(obj client.Object) error {
	gvk, err := apiutil.GVKForObject(obj, s.scheme)
	if err != nil {
		return err
	}
	s.applied[childKey{gvk, obj.GetName()}] = struct{}{}
	return nil
}

// Event records an event on the reconciled object.
func (s *Scope[T]) Event(eventType, reason, action, message string) {
	// An event is a write too (or a patch of a repeated one): logged with the others.
	s.Log.V(1).Info("Recording event", "type", eventType, "reason", reason, "message", message)
	s.recorder.Eventf(s.Object, nil, eventType, reason, action, "%s", message)
}

// Apply makes the child described by desired exist as described, and on return desired
// holds the live child (its status included), whether or not a write was needed.
//
// The engine sets the child's namespace, standard labels and controller owner reference.
// A child the cache does not have is created with a plain create (create.go). An existing
// one is compared with its cached copy: when every field Mooring sets already has the
// desired value (and the spec hash of what Mooring last applied is unchanged, which
// catches fields removed from the desired object) nothing is sent. Otherwise the child is
// server-side applied with field owner "mooring", forcing ownership of the fields Mooring
// sets, which puts back hand-edited values.
func (s *Scope[T]) Apply(ctx context.Context, desired client.Object, opts ...ApplyOption) error {
	var o applyOptions
	for _, opt := range opts {
		opt(&o)
	}
	gvk, err := apiutil.GVKForObject(desired, s.scheme)
	if err != nil {
		return err
	}
	s.prepare(desired, gvk)
	want, err := toApplyMap(desired)
	if err != nil {
		return fmt.Errorf("convert %s %s: %w", gvk.Kind, desired.GetName(), err)
	}
	hash, err := specHash(want)
	if err != nil {
		return err
	}
	unstructured.SetNestedField(want, hash, "metadata", "annotations", mooringv1.SpecHashAnnotation) //nolint:errcheck // metadata is a map we built
	s.applied[childKey{gvk, desired.GetName()}] = struct{}{}

	liveObj, found, err := s.live(ctx, gvk, desired)
	if err != nil {
		return err
	}
	if !found {
		created, err := s.create(ctx, gvk, desired, want)
		if err != nil || created {
			return err
		}
		// It exists and is ours; the cache has not seen it yet. Apply over it.
		if err := s.upgradeOwnership(ctx, gvk, client.ObjectKeyFromObject(desired)); err != nil {
			return err
		}
		return s.apply(ctx, gvk, desired, want)
	}
	if !metav1.IsControlledBy(liveObj, s.Object) {
		return fmt.Errorf("%s %s already exists and is not controlled by %s %s; rename or delete it",
			gvk.Kind, desired.GetName(), s.Object.GetObjectKind().GroupVersionKind().Kind, s.Object.GetName())
	}
	if _, trimmed := cachedContentHash(liveObj); trimmed {
		// The cache holds the child trimmed (cachetrim.go): trusted as it is when this
		// process last saw it match, otherwise read whole and compared.
		if s.trust.holds(liveObj, hash) && s.metadataMatches(want, liveObj) {
			s.skip(gvk, desired, liveObj)
			return nil
		}
		if liveObj, found, err = s.readWhole(ctx, gvk, desired); err != nil {
			return err
		}
		if !found {
			// Deleted since the cache saw it; the next reconcile (its delete event) makes it.
			return fmt.Errorf("%s %s was deleted while being compared", gvk.Kind, desired.GetName())
		}
	}
	have, err := runtime.DefaultUnstructuredConverter.ToUnstructured(liveObj)
	if err != nil {
		return err
	}
	if isSubset(want, have) {
		s.trust.remember(liveObj, hash)
		s.skip(gvk, desired, liveObj)
		return nil
	}
	// Another writer's change of a field it keeps changing is restored with backoff.
	hold, reported, err := s.holdDrift(ctx, gvk, liveObj, want, have)
	if err != nil {
		return err
	}
	if hold {
		reflect.ValueOf(desired).Elem().Set(reflect.ValueOf(liveObj).Elem())
		return nil
	}
	if log := s.Log.V(1); log.Enabled() {
		log.Info("Applying child", "kind", gvk.Kind, "child", klog.KObj(desired),
			"differs", formatPaths(changedFields(want, have, maxLoggedDiffs)))
	}
	if err := s.handOver(ctx, gvk, desired, want, have, o.handOvers); err != nil {
		return err
	}
	if _, ok := liveObj.GetAnnotations()[mooringv1.FieldOwnershipAnnotation]; ok {
		if err := s.upgradeOwnership(ctx, gvk, client.ObjectKeyFromObject(desired)); err != nil {
			return err
		}
	}
	if err := s.apply(ctx, gvk, desired, want); err != nil {
		return err
	}
	if reported {
		// Its ContestedField event reports the restore, once per backoff window; an
		// Updated event per restore is what the backoff is to avoid.
		s.changes = s.changes[:len(s.changes)-1]
	}
	return nil
}

// skip leaves a child that matches as it is; desired becomes the live child.
func (s *Scope[T]) skip(gvk schema.GroupVersionKind, desired, liveObj client.Object) {
	childWrites.WithLabelValues(gvk.Kind, "skipped").Inc()
	s.calm(gvk, desired.GetName())
	reflect.ValueOf(desired).Elem().Set(reflect.ValueOf(liveObj).Elem())
}

// metadataMatches reports whether the metadata Mooring sets (labels, annotations, owner
// references) is on the cached child, which keeps all of it.
func (s *Scope[T]) metadataMatches(want map[string]any, cached client.Object) bool {
	have, err := runtime.DefaultUnstructuredConverter.ToUnstructured(cached)
	if err != nil {
		return false
	}
	return isSubset(want["metadata"], have["metadata"])
}

// readWhole reads the child desired names past the cache, whole.
func (s *Scope[T]) readWhole(ctx context.Context, gvk schema.GroupVersionKind, desired client.Object) (obj client.Object, found bool, err error) {
	live, err := s.scheme.New(gvk)
	if err != nil {
		return nil, false, err
	}
	obj = live.(client.Object)
	if err := s.reader.Get(ctx, client.ObjectKeyFromObject(desired), obj); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("read %s %s: %w", gvk.Kind, desired.GetName(), err)
	}
	// A typed read leaves the type empty; the comparison wants it, as the cache has it.
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return obj, true, nil
}

// live reads the cached copy of the child desired names; found is false when the cache
// has none.
func (s *Scope[T]) live(ctx context.Context, gvk schema.GroupVersionKind, desired client.Object) (obj client.Object, found bool, err error) {
	live, err := s.scheme.New(gvk)
	if err != nil {
		return nil, false, err
	}
	obj = live.(client.Object)
	reader, err := s.liveReader(ctx, gvk)
	if err != nil {
		return nil, false, err
	}
	if err := reader.Get(ctx, client.ObjectKeyFromObject(desired), obj); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("get %s %s: %w", gvk.Kind, desired.GetName(), err)
	}
	return obj, true, nil
}

// apply server-side applies want, forcing Mooring's ownership, and leaves the live child
// in desired.
func (s *Scope[T]) apply(ctx context.Context, gvk schema.GroupVersionKind, desired client.Object, want map[string]any) error {
	u := &unstructured.Unstructured{Object: want}
	err := s.writes.update(gvk, u, func() error {
		return s.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldOwner), client.ForceOwnership)
	})
	if err != nil {
		return fmt.Errorf("apply %s %s: %w", gvk.Kind, desired.GetName(), err)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, desired); err != nil {
		return err
	}
	s.trust.remember(desired, desired.GetAnnotations()[mooringv1.SpecHashAnnotation])
	s.written(gvk, desired, changeUpdated)
	return nil
}

// written counts and logs a write of child obj and remembers it for the reconcile's
// event. (Its watch event was taken care of when the write was sent: ownwrites.go.)
func (s *Scope[T]) written(gvk schema.GroupVersionKind, obj client.Object, verb string) {
	childWrites.WithLabelValues(gvk.Kind, verb).Inc()
	s.Log.Info("Applied child", "kind", gvk.Kind, "child", klog.KObj(obj), "result", verb)
	s.changes = append(s.changes, change{kind: gvk.Kind, name: obj.GetName(), verb: verb})
}

// ApplyOption changes how Apply applies one child.
type ApplyOption func(*applyOptions)

type applyOptions struct {
	handOvers []handOver
}

type handOver struct {
	fieldManager string
	path         []string
}

// HandOver passes the ownership of the field at path to fieldManager whenever the desired
// object leaves it out (say, a Deployment's spec.replicas once an autoscaler owns it).
// Server-side apply removes a field its only manager stops applying, so before such an
// apply the field is applied with its live value under fieldManager: the value stays, and
// whoever writes it next (the autoscaler) takes it over without a conflict with Mooring.
// Applying the field again later takes it back (Mooring applies with force).
func HandOver(fieldManager string, path ...string) ApplyOption {
	return func(o *applyOptions) { o.handOvers = append(o.handOvers, handOver{fieldManager, path}) }
}

// handOver applies, for each hand-over whose field desired leaves out but the live object
// has, that field alone with its live value under the hand-over's field manager.
func (s *Scope[T]) handOver(ctx context.Context, gvk schema.GroupVersionKind, desired client.Object, want, have map[string]any, hs []handOver) error {
	for _, h := range hs {
		if _, found, _ := unstructured.NestedFieldNoCopy(want, h.path...); found {
			continue
		}
		value, found, err := unstructured.NestedFieldNoCopy(have, h.path...)
		if err != nil || !found {
			continue
		}
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		u.SetName(desired.GetName())
		u.SetNamespace(desired.GetNamespace())
		if err := unstructured.SetNestedField(u.Object, runtime.DeepCopyJSONValue(value), h.path...); err != nil {
			return fmt.Errorf("hand over %s of %s %s: %w", strings.Join(h.path, "."), gvk.Kind, desired.GetName(), err)
		}
		// No force: if somebody else already owns the field with another value, it is
		// theirs, and a conflict here would only mean the hand-over is already done.
		err = s.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(h.fieldManager))
		if err != nil && !apierrors.IsConflict(err) {
			return fmt.Errorf("hand over %s of %s %s to %s: %w", strings.Join(h.path, "."), gvk.Kind, desired.GetName(), h.fieldManager, err)
		}
		s.Log.Info("Handed over field", "kind", gvk.Kind, "child", klog.KObj(desired), "field", strings.Join(h.path, "."), "fieldManager", h.fieldManager)
	}
	return nil
}

// ApplyAll applies children in order (see Apply); on return each holds its live object.
func (s *Scope[T]) ApplyAll(ctx context.Context, children []client.Object) error {
	for _, c := range children {
		if err := s.Apply(ctx, c); err != nil {
			return err
		}
	}
	return nil
}

// First returns the first object of type C among objs, or the zero C (nil) when none is:
// after ApplyAll, the live child a status is derived from.
func First[C client.Object](objs []client.Object) C {
	for _, o := range objs {
		if c, ok := o.(C); ok {
			return c
		}
	}
	var zero C
	return zero
}

// prepare sets what every child has: namespace, labels, owner reference, type meta.
func (s *Scope[T]) prepare(obj client.Object, gvk schema.GroupVersionKind) {
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	obj.SetNamespace(s.Object.GetNamespace())
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	for k, v := range Labels(s.component, s.Object.GetName()) {
		labels[k] = v
	}
	obj.SetLabels(labels)
	// The owner is always namespaced in the same namespace and has a kind registered in
	// the scheme, the only two ways this can fail.
	_ = controllerutil.SetControllerReference(s.Object, obj, s.scheme)
}

// Delete removes a child the object controls, if it exists. It is for children whose
// removal is a decision of the handler; children that are simply no longer applied are
// pruned by the engine.
func (s *Scope[T]) Delete(ctx context.Context, obj client.Object) error {
	gvk, err := apiutil.GVKForObject(obj, s.scheme)
	if err != nil {
		return err
	}
	if err := s.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		return client.IgnoreNotFound(err)
	}
	return s.deleteChild(ctx, obj, gvk.Kind)
}

func (s *Scope[T]) deleteChild(ctx context.Context, obj client.Object, kind string) error {
	if !metav1.IsControlledBy(obj, s.Object) || obj.GetDeletionTimestamp() != nil {
		return nil
	}
	err := s.Client.Delete(ctx, obj, client.Preconditions{UID: ptrTo(obj.GetUID())},
		client.PropagationPolicy(metav1.DeletePropagationBackground))
	if client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("delete %s %s: %w", kind, obj.GetName(), err)
	}
	childWrites.WithLabelValues(kind, changeDeleted).Inc()
	s.Log.Info("Deleted child", "kind", kind, "child", klog.KObj(obj))
	s.changes = append(s.changes, change{kind: kind, name: obj.GetName(), verb: changeDeleted})
	return nil
}

// prune deletes children of the owned kinds that this reconcile did not apply: what a
// removed field produced (a Service once the port is unset) goes away with it.
func (s *Scope[T]) prune(ctx context.Context, owned []client.Object) error {
	return s.pruneFrom(ctx, owned, true, func(schema.GroupVersionKind) client.Reader { return s.Client })
}

// pruneOptional prunes the optional kinds whose cache runs. One never found served has
// no children to prune, and looking it up again on every reconcile would cost a discovery
// request each time.
func (s *Scope[T]) pruneOptional(ctx context.Context) error {
	var served []client.Object
	readers := s.optional.started()
	for gvk := range readers {
		served = append(served, s.optional.kinds[gvk])
	}
	return s.pruneFrom(ctx, served, false, func(gvk schema.GroupVersionKind) client.Reader { return readers[gvk] })
}

// pruneFrom lists the children of the owned kinds, through OwnerIndex when indexed (the
// manager's cache) or else by label selector (an optional kind's own cache), and deletes
// the ones this reconcile did not apply.
func (s *Scope[T]) pruneFrom(ctx context.Context, owned []client.Object, indexed bool, readerFor func(schema.GroupVersionKind) client.Reader) error {
	if s.keepAll {
		return nil
	}
	for _, o := range owned {
		gvk, err := apiutil.GVKForObject(o, s.scheme)
		if err != nil {
			return err
		}
		listObj, err := s.scheme.New(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err != nil {
			return err
		}
		list := listObj.(client.ObjectList)
		sel := client.MatchingLabels{
			mooringv1.InstanceLabel:  s.Object.GetName(),
			mooringv1.ComponentLabel: s.component,
			mooringv1.ManagedByLabel: mooringv1.ManagedBy,
		}
		opts := []client.ListOption{client.InNamespace(s.Object.GetNamespace()), sel}
		if indexed {
			opts = append(opts, ChildrenOf(s.component, s.Object.GetName()))
		}
		if err := readerFor(gvk).List(ctx, list, opts...); err != nil {
			return fmt.Errorf("list %s: %w", gvk.Kind, err)
		}
		err = apimeta.EachListItem(list, func(o runtime.Object) error {
			child := o.(client.Object)
			if _, ok := s.applied[childKey{gvk, child.GetName()}]; ok {
				return nil
			}
			return s.deleteChild(ctx, child, gvk.Kind)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func ptrTo[V any](v V) *V { return &v }
