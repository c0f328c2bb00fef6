package testutil

import (
	"context"
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// envtest runs no Kubernetes controllers; these helpers play their part where a test needs
// a workload to finish.

// FinishJob plays the Job controller: the Job at key succeeds or fails, with the
// conditions and times the API server's validation asks for.
func FinishJob(t testing.TB, c client.Client, key types.NamespacedName, succeed bool) {
	t.Helper()
	ctx := context.Background()
	Eventually(t, DefaultTimeout, "Job "+key.Name+" marked finished", func() error {
		j := &batchv1.Job{}
		if err := c.Get(ctx, key, j); err != nil {
			return err
		}
		now := metav1.Now()
		if j.Status.StartTime == nil { // immutable once the Job controller set it
			j.Status.StartTime = &now
		}
		if succeed {
			j.Status.Succeeded, j.Status.CompletionTime = 1, &now
			j.Status.Conditions = []batchv1.JobCondition{
				{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: now},
				{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: now},
			}
		} else {
			const reason, msg = "BackoffLimitExceeded", "Job has reached the specified backoff limit"
			j.Status.Failed = 3
			j.Status.Conditions = []batchv1.JobCondition{
				{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, LastTransitionTime: now, Reason: reason, Message: msg},
				{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, LastTransitionTime: now, Reason: reason, Message: msg},
			}
		}
		return c.Status().Update(ctx, j)
	})
}

// MarkStatefulSetReady plays the StatefulSet controller: every replica of the StatefulSet
// at key becomes ready (retrying on conflicts with the operator's own writes).
func MarkStatefulSetReady(t testing.TB, c client.Client, key types.NamespacedName) {
	t.Helper()
	ctx := context.Background()
	Eventually(t, DefaultTimeout, "StatefulSet "+key.Name+" marked ready", func() error {
		sts := &appsv1.StatefulSet{}
		if err := c.Get(ctx, key, sts); err != nil {
			return err
		}
		n := int32(1)
		if sts.Spec.Replicas != nil {
			n = *sts.Spec.Replicas
		}
		sts.Status = appsv1.StatefulSetStatus{ObservedGeneration: sts.Generation, Replicas: n, ReadyReplicas: n, UpdatedReplicas: n, AvailableReplicas: n}
		return c.Status().Update(ctx, sts)
	})
}

// WaitEvent waits for an event of the type and reason about the named object in ns.
func WaitEvent(t testing.TB, c client.Reader, ns, eventType, reason, regarding string) *eventsv1.Event {
	t.Helper()
	var found *eventsv1.Event
	Eventually(t, DefaultTimeout, fmt.Sprintf("a %s event %s about %s", eventType, reason, regarding), func() error {
		events := &eventsv1.EventList{}
		if err := c.List(context.Background(), events, client.InNamespace(ns)); err != nil {
			return err
		}
		var seen []string
		for i, e := range events.Items {
			if e.Type == eventType && e.Reason == reason && e.Regarding.Name == regarding {
				found = &events.Items[i]
				return nil
			}
			seen = append(seen, e.Type+"/"+e.Reason+"/"+e.Regarding.Name)
		}
		return fmt.Errorf("events: %v", seen)
	})
	return found
}
