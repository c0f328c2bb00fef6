package engine

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
)

// The engine's side of contested fields (contested.go): what Apply asks before it
// restores a drifted child, and the owner's condition.

// holdDrift is asked by Apply when the live child differs from want (have is the live
// child as a map). It returns hold=true when the difference is another writer's change of
// a field whose backoff has not ended: the child is left as it is and the owner looks
// again at the end of the backoff. reported tells whether the restore it allows was just
// reported by a ContestedField event, which then stands for the Updated one.
func (s *Scope[T]) holdDrift(ctx context.Context, gvk schema.GroupVersionKind, live client.Object, want, have map[string]any) (hold, reported bool, err error) {
	if s.contests == nil {
		return false, false, nil
	}
	// What Mooring applies changed since its last write: a spec change wins at once.
	wantHash, _, _ := unstructured.NestedString(want, "metadata", "annotations", mooringv1.SpecHashAnnotation)
	if live.GetAnnotations()[mooringv1.SpecHashAnnotation] != wantHash {
		return false, false, nil
	}
	fields := changedFields(want, have, maxContestedFields)
	if len(fields) == 0 {
		return false, false, nil
	}
	owner := types.NamespacedName{Namespace: s.Object.GetNamespace(), Name: s.Object.GetName()}
	p := s.contests.observe(owner, gvk, live.GetName(), fields, live.GetResourceVersion())
	var managers map[fieldKey]fieldWriter
	if len(p.lookup) > 0 {
		// The cache strips managedFields: read them, metadata only, past it.
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(gvk)
		if err := s.reader.Get(ctx, client.ObjectKeyFromObject(live), m); err != nil {
			return false, false, fmt.Errorf("read the field managers of %s %s: %w", gvk.Kind, live.GetName(), err)
		}
		lookup := make(map[fieldKey][]string, len(p.lookup))
		for _, k := range p.lookup {
			lookup[k] = p.paths[k]
		}
		managers = otherManagers(m.GetManagedFields(), lookup)
	}
	p, reports := s.contests.settle(p, managers)
	for _, r := range reports {
		s.Event(corev1.EventTypeWarning, EventContestedField, "Restore", r)
	}
	s.requeue(p.wait)
	if !p.restore {
		s.Log.V(1).Info("Held back restoring a contested child", "kind", gvk.Kind, "child", klog.KObj(live), "for", p.wait)
	}
	return !p.restore, p.restore && len(reports) > 0, nil
}

// calm tells the contests that the live child matches what Mooring applies.
func (s *Scope[T]) calm(gvk schema.GroupVersionKind, name string) {
	if s.contests == nil {
		return
	}
	owner := types.NamespacedName{Namespace: s.Object.GetNamespace(), Name: s.Object.GetName()}
	s.requeue(s.contests.calm(owner, gvk, name))
}

// requeue asks for a reconcile of the owner within d (the soonest asked for wins).
func (s *Scope[T]) requeue(d time.Duration) {
	if d > 0 && (s.requeueAfter == 0 || d < s.requeueAfter) {
		s.requeueAfter = d
	}
}

// soonest merges a handler's result with the scope's own requeue: the earlier wins.
func soonest(res reconcile.Result, after time.Duration) reconcile.Result {
	if after > 0 && (res.RequeueAfter == 0 || after < res.RequeueAfter) {
		res.RequeueAfter = after
	}
	return res
}

// setContested sets or clears obj's Contested condition from what is known of its
// children's fights. Its message changes once per backoff window, not per restore.
func (r *Reconciler[T]) setContested(obj T) {
	msg := r.contests.condition(types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()})
	if msg == "" {
		meta.RemoveStatusCondition(obj.StatusConditions(), mooringv1.ConditionContested)
		return
	}
	setCondition(obj, mooringv1.ConditionContested, metav1.ConditionTrue, mooringv1.ReasonOtherWriter, msg)
}
