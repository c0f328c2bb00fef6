package engine

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// ownWrites remembers the resourceVersion of every child write a reconcile made, so that
// the watch event that write causes does not queue the owner again: the reconcile that
// wrote already saw the result (ReplicaSet's "expectations", keyed by resourceVersion).
// Any other change of a child (status written by its controller, a hand edit, a deletion)
// has another resourceVersion and queues the owner as before.
//
// Only the kinds whose watch consults it (Options.Owns and Options.Watches) are tracked:
// an expectation nothing will ever take would wait for the TTL for nothing.
type ownWrites struct {
	mu      sync.Mutex
	pending map[writeKey]ownWrite
	// tracked are the kinds whose writes are remembered; nil tracks every kind.
	tracked map[schema.GroupVersionKind]bool
}

type writeKey struct {
	gvk             schema.GroupVersionKind
	namespace, name string
}

// ownWrite holds the resourceVersions of a child's writes whose events have not come
// yet: a reconcile may write a child twice (its ownership conversion, then the apply).
type ownWrite struct {
	resourceVersions []string
	at               time.Time
}

// maxPendingPerChild bounds an entry: more writes of one child than this before their
// events arrive do not happen in one reconcile, and the oldest is dropped first.
const maxPendingPerChild = 4

// ownWriteTTL bounds how long an expected event is waited for: an event lost to a
// re-list never comes, and its entry must not stay forever.
const ownWriteTTL = 2 * time.Minute

func newOwnWrites() *ownWrites { return &ownWrites{pending: map[writeKey]ownWrite{}} }

// track makes w remember the writes of kind gvk (and, from the first call, of the kinds
// tracked so only). It is called while the controller is set up, before any write.
func (w *ownWrites) track(gvk schema.GroupVersionKind) {
	if w.tracked == nil {
		w.tracked = map[schema.GroupVersionKind]bool{}
	}
	w.tracked[gvk] = true
}

// expectCreate notes, before the create is sent, that obj is about to be created: the
// watch event of a create may reach the informer before the create's response reaches
// the reconcile. Any create event of that name matches; forget it if the create fails.
func (w *ownWrites) expectCreate(gvk schema.GroupVersionKind, obj client.Object) {
	w.add(gvk, obj, anyCreate)
}

// expectUpdate notes, before an update or patch is sent, that obj is about to be written:
// like a create's, its watch event often reaches the informer before the response, whose
// resourceVersion record then puts in the token's place. Until then, the next update
// event of obj matches. That may be another writer's event, but only one from before
// Mooring's write (events arrive in resourceVersion order, and Mooring's own comes first
// among the later ones), whose result the response of Mooring's write already includes.
func (w *ownWrites) expectUpdate(gvk schema.GroupVersionKind, obj client.Object) {
	w.add(gvk, obj, anyUpdate)
}

// Tokens that stand for a write whose resourceVersion is not known yet: anyCreate
// matches the create event of the object, anyUpdate its next update event.
const (
	anyCreate = ""
	anyUpdate = "*"
)

// record notes that obj, of kind gvk, was just written with obj's resourceVersion, in
// place of the token expectUpdate left if no event has taken it yet. If one has, it may
// have been another writer's from before this write, so the resourceVersion is expected
// all the same (an entry nothing matches goes with the TTL).
func (w *ownWrites) record(gvk schema.GroupVersionKind, obj client.Object) {
	if w == nil || obj.GetResourceVersion() == "" {
		return
	}
	w.take(gvk, obj, anyUpdate)
	w.add(gvk, obj, obj.GetResourceVersion())
}

// update sends one update of a child (a patch or an apply) with send, announced before
// and recorded after, so that its watch event does not queue the owner again. result
// names the child before send and holds what the API server returned after it.
func (w *ownWrites) update(gvk schema.GroupVersionKind, result client.Object, send func() error) error {
	w.expectUpdate(gvk, result)
	if err := send(); err != nil {
		w.failed(gvk, result)
		return err
	}
	w.record(gvk, result)
	return nil
}

// failed withdraws the token of an update that was not made.
func (w *ownWrites) failed(gvk schema.GroupVersionKind, obj client.Object) {
	if w != nil {
		w.take(gvk, obj, anyUpdate)
	}
}

// take removes one pending resourceVersion (or token) of obj, if there is one.
func (w *ownWrites) take(gvk schema.GroupVersionKind, obj client.Object, resourceVersion string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	k := writeKey{gvk, obj.GetNamespace(), obj.GetName()}
	e := w.pending[k]
	for i, rv := range e.resourceVersions {
		if rv == resourceVersion {
			w.removeAt(k, e, i)
			return
		}
	}
}

// removeAt drops the i-th pending resourceVersion of entry e, and the entry once empty.
// The caller holds w.mu.
func (w *ownWrites) removeAt(k writeKey, e ownWrite, i int) {
	e.resourceVersions = append(e.resourceVersions[:i:i], e.resourceVersions[i+1:]...)
	if len(e.resourceVersions) == 0 {
		delete(w.pending, k)
		return
	}
	w.pending[k] = e
}

func (w *ownWrites) add(gvk schema.GroupVersionKind, obj client.Object, resourceVersion string) {
	if w == nil || (w.tracked != nil && !w.tracked[gvk]) {
		return
	}
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	k := writeKey{gvk, obj.GetNamespace(), obj.GetName()}
	versions := append(w.pending[k].resourceVersions, resourceVersion)
	if len(versions) > maxPendingPerChild {
		versions = versions[1:]
	}
	w.pending[k] = ownWrite{versions, now}
	if len(w.pending)%1024 == 0 {
		for k, e := range w.pending {
			if now.Sub(e.at) > ownWriteTTL {
				delete(w.pending, k)
			}
		}
	}
}

// expected reports whether obj, as an event delivers it, is exactly a write of ours (for
// a create event: any create we announced), and forgets that write.
func (w *ownWrites) expected(gvk schema.GroupVersionKind, obj client.Object, create bool) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	k := writeKey{gvk, obj.GetNamespace(), obj.GetName()}
	e, ok := w.pending[k]
	if !ok {
		return false
	}
	for i, rv := range e.resourceVersions {
		if rv == obj.GetResourceVersion() || (create && rv == anyCreate) || (!create && rv == anyUpdate) {
			w.removeAt(k, e, i)
			return true
		}
	}
	return false
}

func (w *ownWrites) forget(gvk schema.GroupVersionKind, obj client.Object) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.pending, writeKey{gvk, obj.GetNamespace(), obj.GetName()})
}

// childHandler queues a child's controlling owner, like builder.Owns, except for the
// events of the reconcile's own writes.
type childHandler struct {
	gvk    schema.GroupVersionKind
	writes *ownWrites
	trust  *trust
	owner  handler.EventHandler
}

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

func (h *childHandler) Create(ctx context.Context, e event.CreateEvent, q queue) {
	if h.writes.expected(h.gvk, e.Object, true) {
		return
	}
	h.owner.Create(ctx, e, q)
}

func (h *childHandler) Update(ctx context.Context, e event.UpdateEvent, q queue) {
	if h.writes.expected(h.gvk, e.ObjectNew, false) {
		return
	}
	h.owner.Update(ctx, e, q)
}

func (h *childHandler) Delete(ctx context.Context, e event.DeleteEvent, q queue) {
	h.writes.forget(h.gvk, e.Object)
	h.trust.forget(e.Object.GetUID())
	h.owner.Delete(ctx, e, q)
}

func (h *childHandler) Generic(ctx context.Context, e event.GenericEvent, q queue) {
	h.owner.Generic(ctx, e, q)
}
