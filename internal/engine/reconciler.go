package engine

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	ctrlhandler "sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
)

// Reconciler drives one kind through its Handler. Build it with New and register it with
// SetupWithManager.
type Reconciler[T Object] struct {
	client    client.Client
	reader    client.Reader
	recorder  recorder.EventRecorder
	handler   Handler[T]
	component string
	owns      []client.Object
	// kind names the reconciled kind in traces, e.g. "App".
	kind     string
	optional *optionalKinds
	onDemand *onDemandWatches
	writes   *ownWrites
	trust    *trust
	contests *contests
}

// Options configure a Reconciler.
type Options struct {
	// Component is the value of the app.kubernetes.io/component label on the kind's
	// children, e.g. "app" or "cache". It scopes pod selectors and pruning to the kind.
	Component string
	// Owns lists the child types (empty objects, e.g. &appsv1.Deployment{}) the kind
	// creates: they are watched and pruned when no longer applied.
	Owns []client.Object
	// Optional lists further child types whose API may not be served (CRDs another
	// project installs, such as the Gateway API's HTTPRoute). They are watched, cached and
	// pruned from the moment a reconcile finds them served (Scope.Served); until then the
	// manager runs without them.
	Optional []client.Object
	// Watches lists further kinds the handler writes outside Apply (CreateOnce, Patch,
	// DeleteExact: one-shot Jobs, volumes), and how their events map to the reconciled
	// object. Like those of Owns, the events of the reconcile's own writes queue nothing;
	// unlike Owns, they are never pruned.
	Watches []Watch
	// OnDemand are watches started only when a reconcile asks for them (Scope.StartWatch).
	OnDemand []OnDemandWatch
	// MaxConcurrentReconciles is how many objects of the kind reconcile in parallel.
	MaxConcurrentReconciles int
}

// Watch is a kind of Options.Watches.
type Watch struct {
	// Object is an empty object of the kind, e.g. &batchv1.Job{}.
	Object client.Object
	// Handler maps an event to the objects to reconcile; nil maps it to its controlling
	// owner of the reconciled kind, as Owns does.
	Handler ctrlhandler.EventHandler
}

// SetupWithManager creates the reconciler for handler's kind and registers it with mgr,
// watching the kind and the child types it owns. Extra builder steps (more watches) can
// be given as extend.
func SetupWithManager[T Object](mgr ctrl.Manager, handler Handler[T], opts Options, extend ...func(*builder.Builder)) error {
	optional, err := newOptionalKinds(mgr, handler.NewObject(), opts.Optional)
	if err != nil {
		return fmt.Errorf("optional kinds of %s: %w", opts.Component, err)
	}
	r := &Reconciler[T]{
		client:    mgr.GetClient(),
		reader:    mgr.GetAPIReader(),
		recorder:  mgr.GetEventRecorder("mooring"),
		handler:   handler,
		component: opts.Component,
		owns:      opts.Owns,
		optional:  optional,
		onDemand:  newOnDemandWatches(opts.OnDemand),
		writes:    newOwnWrites(),
		trust:     newTrust(),
		contests:  newContests(DefaultContestBackoff),
	}
	gvk, err := apiutil.GVKForObject(handler.NewObject(), mgr.GetScheme())
	if err != nil {
		return fmt.Errorf("kind of %T: %w", handler.NewObject(), err)
	}
	r.kind = gvk.Kind
	b := ctrl.NewControllerManagedBy(mgr).
		Named(opts.Component).
		// Status writes do not change the generation; skipping them spares a reconcile
		// after every status patch. Annotations carry the pause switch, so they count.
		For(handler.NewObject(), builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(1, opts.MaxConcurrentReconciles)})
	owner := ctrlhandler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(), handler.NewObject(), ctrlhandler.OnlyControllerOwner())
	watches := make([]Watch, 0, len(opts.Owns)+len(opts.Watches))
	for _, o := range opts.Owns {
		watches = append(watches, Watch{Object: o, Handler: owner})
	}
	for _, w := range opts.Watches {
		if w.Handler == nil {
			w.Handler = owner
		}
		watches = append(watches, w)
	}
	for _, w := range watches {
		wgvk, err := apiutil.GVKForObject(w.Object, mgr.GetScheme())
		if err != nil {
			return fmt.Errorf("kind of %T: %w", w.Object, err)
		}
		r.writes.track(wgvk)
		// Like Owns, but the events of the reconcile's own writes queue nothing.
		b = b.Watches(w.Object, &childHandler{gvk: wgvk, writes: r.writes, trust: r.trust, owner: w.Handler})
	}
	for _, e := range extend {
		e(b)
	}
	c, err := b.Build(r)
	if err != nil {
		return err
	}
	optional.ctrl, r.onDemand.ctrl = c, c
	return nil
}

// Reconcile is the one skeleton every kind runs: fetch, finalize or pause, validate, sync,
// prune, and write status once on the way out.
func (r *Reconciler[T]) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, retErr error) {
	obj := r.handler.NewObject()
	// One span per reconcile; deferred first, so it sees the result as returned.
	ctx, span := startReconcile(ctx, r.kind, req)
	defer func() { endReconcile(span, obj, res, retErr) }()
	log := ctrl.LoggerFrom(ctx)
	if err := r.client.Get(ctx, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) {
			r.contests.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	s := &Scope[T]{
		Object: obj, Client: r.client, Log: log,
		reader: r.reader, scheme: r.client.Scheme(), recorder: r.recorder,
		component: r.component, applied: map[childKey]struct{}{}, optional: r.optional, onDemand: r.onDemand,
		writes: r.writes, trust: r.trust, contests: r.contests,
	}
	before := obj.DeepCopyObject().(T)

	// One status write per reconcile, whatever the exit path, and none when nothing changed.
	defer func() {
		// What was done is reported even when the reconcile failed half-way.
		s.reportChanges()
		if retErr != nil {
			r.markFailed(s, retErr)
			// A spec problem is the user's to fix: report it, do not retry in a loop.
			var verr *ValidationError
			if errors.As(retErr, &verr) {
				retErr = nil
				res = ctrl.Result{}
			}
		}
		if err := r.writeStatus(ctx, before, obj); err != nil {
			retErr = errors.Join(retErr, err)
		}
	}()

	if !obj.GetDeletionTimestamp().IsZero() {
		return r.finalize(ctx, s)
	}
	// The patch response refreshes obj, so the reconcile goes on with it.
	if err := r.ensureFinalizer(ctx, obj); err != nil {
		return ctrl.Result{}, err
	}
	if obj.GetAnnotations()[mooringv1.PausedAnnotation] == "true" {
		setCondition(obj, mooringv1.ConditionPaused, metav1.ConditionTrue, mooringv1.ReasonPaused,
			"Reconciliation is paused; remove the "+mooringv1.PausedAnnotation+" annotation to resume.")
		return ctrl.Result{}, nil
	}
	meta.RemoveStatusCondition(obj.StatusConditions(), mooringv1.ConditionPaused)

	if err := r.handler.Validate(obj); err != nil {
		return ctrl.Result{}, err
	}
	res, err := r.handler.Sync(ctx, s)
	if err != nil {
		return res, err
	}
	r.setContested(obj)
	res = soonest(res, s.requeueAfter)
	if err := s.prune(ctx, r.owns); err != nil {
		return res, err
	}
	if err := s.pruneOptional(ctx); err != nil {
		return res, err
	}
	obj.SetObservedGeneration(obj.GetGeneration())
	return res, nil
}

// markFailed turns an error into status and a Warning event the user can act on.
func (r *Reconciler[T]) markFailed(s *Scope[T], err error) {
	reason, event := mooringv1.ReasonReconcileError, EventReconcileError
	var verr *ValidationError
	if errors.As(err, &verr) {
		reason, event = mooringv1.ReasonInvalidSpec, EventInvalidSpec
	}
	msg := err.Error()
	prev := meta.FindStatusCondition(*s.Object.StatusConditions(), mooringv1.ConditionReady)
	repeated := prev != nil && prev.Status == metav1.ConditionFalse && prev.Reason == reason && prev.Message == msg
	setCondition(s.Object, mooringv1.ConditionReady, metav1.ConditionFalse, reason, msg)
	s.Object.SetErrorPhase()
	// Events are writes too: a failure that repeats with backoff is reported once, not on
	// every retry; its condition stays on the object.
	if !repeated {
		s.Event(corev1.EventTypeWarning, event, "Reconcile", msg)
	}
}

// ensureFinalizer makes obj carry exactly the Mooring finalizer its spec needs: a policy
// changed to one without clean-up drops the finalizer it no longer needs.
func (r *Reconciler[T]) ensureFinalizer(ctx context.Context, obj T) error {
	f, ok := r.handler.(Finalizing[T])
	if !ok {
		return nil
	}
	name := f.Finalizer(obj)
	var stale []string
	for _, existing := range obj.GetFinalizers() {
		if existing != name && isMooringFinalizer(existing) {
			stale = append(stale, existing)
		}
	}
	missing := name != "" && !controllerutil.ContainsFinalizer(obj, name)
	if len(stale) == 0 && !missing {
		return nil
	}
	return r.patchFinalizers(ctx, obj, func() {
		for _, f := range stale {
			controllerutil.RemoveFinalizer(obj, f)
		}
		if missing {
			controllerutil.AddFinalizer(obj, name)
		}
	})
}

func isMooringFinalizer(name string) bool { return strings.HasPrefix(name, mooringv1.FinalizerPrefix) }

func (r *Reconciler[T]) finalize(ctx context.Context, s *Scope[T]) (ctrl.Result, error) {
	obj := s.Object
	f, ok := r.handler.(Finalizing[T])
	if !ok {
		return ctrl.Result{}, nil
	}
	var mine []string
	for _, existing := range obj.GetFinalizers() {
		if isMooringFinalizer(existing) {
			mine = append(mine, existing)
		}
	}
	if len(mine) == 0 {
		return ctrl.Result{}, nil
	}
	done, res, err := f.Finalize(ctx, s)
	if err != nil || !done {
		return res, err
	}
	return ctrl.Result{}, r.patchFinalizers(ctx, obj, func() {
		for _, name := range mine {
			controllerutil.RemoveFinalizer(obj, name)
		}
	})
}

// patchFinalizers changes the finalizer list with an optimistic-lock merge patch, so a
// finalizer somebody else added at the same time is never dropped.
func (r *Reconciler[T]) patchFinalizers(ctx context.Context, obj T, change func()) error {
	base := obj.DeepCopyObject().(T)
	change()
	ctrl.LoggerFrom(ctx).V(1).Info("Patching finalizers", "from", base.GetFinalizers(), "to", obj.GetFinalizers())
	err := r.client.Patch(ctx, obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("update finalizers: %w", err)
	}
	return nil
}

// writeStatus applies the status subresource when, and only when, it changed. Server-side
// apply of the whole status (rather than a diff against what was read) makes the stored
// status exactly the derived one: zero values are stored, fields no longer set are removed.
func (r *Reconciler[T]) writeStatus(ctx context.Context, before, after T) error {
	if after.GetDeletionTimestamp() != nil && len(after.GetFinalizers()) == 0 {
		return nil // about to disappear
	}
	if equality.Semantic.DeepEqual(statusOf(before), statusOf(after)) {
		return nil
	}
	if log := ctrl.LoggerFrom(ctx).V(1); log.Enabled() {
		log.Info("Writing status", "differs", statusDiffs(before, after, maxLoggedDiffs))
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(after)
	if err != nil {
		return err
	}
	dropNulls(m)
	u := &unstructured.Unstructured{Object: map[string]any{"status": m["status"]}}
	gvk, err := apiutil.GVKForObject(after, r.client.Scheme())
	if err != nil {
		return err
	}
	u.SetGroupVersionKind(gvk)
	u.SetName(after.GetName())
	u.SetNamespace(after.GetNamespace())
	if err := r.client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u),
		client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("apply status: %w", err)
	}
	return nil
}

// statusOf returns the Status field every Mooring kind has.
func statusOf(obj Object) any {
	return reflect.ValueOf(obj).Elem().FieldByName("Status").Interface()
}

// setCondition sets a condition, keeping lastTransitionTime when the status is unchanged
// so an unchanged condition is an unchanged status.
func setCondition(obj Object, condType string, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(obj.StatusConditions(), metav1.Condition{
		Type: condType, Status: status, Reason: reason, Message: message,
		ObservedGeneration: obj.GetGeneration(),
	})
}

// SetCondition is setCondition for handlers.
func SetCondition(obj Object, condType string, status metav1.ConditionStatus, reason, message string) {
	setCondition(obj, condType, status, reason, message)
}

// RequeueAfter is a small helper for handlers that must look again later (for example a
// time-based schedule) because no watch event will come.
func RequeueAfter(d time.Duration) reconcile.Result { return reconcile.Result{RequeueAfter: d} }

// HasCondition reports whether obj already has the condition with this status and reason;
// handlers use it to record an event only when a condition changes.
func HasCondition(obj Object, condType string, status metav1.ConditionStatus, reason string) bool {
	c := meta.FindStatusCondition(*obj.StatusConditions(), condType)
	return c != nil && c.Status == status && c.Reason == reason
}
