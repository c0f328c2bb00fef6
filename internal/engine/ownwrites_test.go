package engine

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
)

// countingHandler counts the events childHandler passes on to the owner handler.
type countingHandler struct{ create, update, del int }

func (c *countingHandler) Create(context.Context, event.CreateEvent, queue)   { c.create++ }
func (c *countingHandler) Update(context.Context, event.UpdateEvent, queue)   { c.update++ }
func (c *countingHandler) Delete(context.Context, event.DeleteEvent, queue)   { c.del++ }
func (c *countingHandler) Generic(context.Context, event.GenericEvent, queue) {}

var _ handler.EventHandler = &countingHandler{}

func cm(rv string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-config", ResourceVersion: rv}}
}

func TestChildHandlerSkipsOnlyTheEventsOfOwnWrites(t *testing.T) {
	gvk := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	w := newOwnWrites()
	owner := &countingHandler{}
	h := &childHandler{gvk: gvk, writes: w, owner: owner}
	ctx := context.Background()

	// A create is announced before it is sent: its event may come before its response.
	w.expectCreate(gvk, cm(""))
	h.Create(ctx, event.CreateEvent{Object: cm("10")}, nil)
	if owner.create != 0 {
		t.Fatal("the create event of Mooring's own create queued the owner")
	}
	// The expectation is used up: the same event again (a re-list) queues the owner.
	h.Create(ctx, event.CreateEvent{Object: cm("10")}, nil)
	if owner.create != 1 {
		t.Fatalf("a create event nobody expects must queue the owner; queued %d", owner.create)
	}
	// An announced create does not hide an update.
	w.expectCreate(gvk, cm(""))
	h.Update(ctx, event.UpdateEvent{ObjectOld: cm("10"), ObjectNew: cm("11")}, nil)
	if owner.update != 1 {
		t.Fatal("an update must not match an announced create")
	}
	w.forget(gvk, cm(""))

	w.record(gvk, cm("13"))
	h.Update(ctx, event.UpdateEvent{ObjectOld: cm("11"), ObjectNew: cm("12")}, nil)
	if owner.update != 2 {
		t.Fatal("an update by someone else (another resourceVersion) must queue the owner")
	}
	h.Update(ctx, event.UpdateEvent{ObjectOld: cm("12"), ObjectNew: cm("13")}, nil)
	if owner.update != 2 {
		t.Fatal("the update event of Mooring's own apply queued the owner")
	}

	// An ownership conversion and the apply after it: two writes, two events, both ours.
	w.record(gvk, cm("20"))
	w.record(gvk, cm("21"))
	h.Update(ctx, event.UpdateEvent{ObjectOld: cm("13"), ObjectNew: cm("20")}, nil)
	h.Update(ctx, event.UpdateEvent{ObjectOld: cm("20"), ObjectNew: cm("21")}, nil)
	if owner.update != 2 || len(w.pending) != 0 {
		t.Fatalf("the events of two own writes in one reconcile queued the owner %d times, pending %v", owner.update-2, w.pending)
	}

	// An update announced before it is sent: its event may beat its response.
	w.expectUpdate(gvk, cm(""))
	h.Update(ctx, event.UpdateEvent{ObjectOld: cm("21"), ObjectNew: cm("30")}, nil)
	w.record(gvk, cm("30"))
	if owner.update != 2 {
		t.Fatal("the event of an announced update that beat its response queued the owner")
	}
	h.Update(ctx, event.UpdateEvent{ObjectOld: cm("30"), ObjectNew: cm("31")}, nil)
	if owner.update != 3 {
		t.Fatal("a later update by someone else must queue the owner")
	}
	// An announced update that failed expects nothing.
	w.expectUpdate(gvk, cm(""))
	w.failed(gvk, cm(""))
	h.Update(ctx, event.UpdateEvent{ObjectOld: cm("31"), ObjectNew: cm("32")}, nil)
	if owner.update != 4 {
		t.Fatal("an update after a failed write must queue the owner")
	}
	w.forget(gvk, cm(""))

	w.record(gvk, cm("14"))
	h.Delete(ctx, event.DeleteEvent{Object: cm("14")}, nil)
	if owner.del != 1 || len(w.pending) != 0 {
		t.Fatalf("a deletion queues the owner and forgets the write: queued %d, pending %v", owner.del, w.pending)
	}
}

func TestOwnWritesForgetsWhatNeverCame(t *testing.T) {
	gvk := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	w := newOwnWrites()
	w.pending[writeKey{gvk, "ns", "lost"}] = ownWrite{[]string{"1"}, time.Now().Add(-2 * ownWriteTTL)}
	for i := range 1023 {
		c := cm("5")
		c.Name = fmt.Sprintf("c%d", i)
		w.record(gvk, c)
	}
	if _, ok := w.pending[writeKey{gvk, "ns", "lost"}]; ok {
		t.Fatalf("a write whose event never came is kept after %v (%d pending)", ownWriteTTL, len(w.pending))
	}
}

// update announces a write and records its result; a write that fails leaves nothing
// expected, so the next update event (someone else's) queues the owner.
func TestOwnWritesUpdate(t *testing.T) {
	gvk := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	w := newOwnWrites()
	c := cm("")
	if err := w.update(gvk, c, func() error { c.ResourceVersion = "7"; return nil }); err != nil {
		t.Fatal(err)
	}
	if !w.expected(gvk, cm("7"), false) || len(w.pending) != 0 {
		t.Fatalf("the written resourceVersion 7 was not the one expected; pending %v", w.pending)
	}
	if err := w.update(gvk, cm(""), func() error { return fmt.Errorf("refused") }); err == nil {
		t.Fatal("the send's error was lost")
	}
	if w.expected(gvk, cm("8"), false) {
		t.Fatal("a failed write left an expectation that hides another writer's update")
	}
}
