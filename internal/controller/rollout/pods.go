package rollout

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/internal/engine"
)

// Pods are read from the cache, which holds only pods labelled managed-by=mooring, trimmed
// by TrimPod to the status a failure report needs (internal/manager's CacheOptions).
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch

// PodFailure is why an owner's pods do not become ready: a container's waiting or
// terminated reason as the kubelet reports it, or the scheduler's.
type PodFailure struct {
	// Reason is CamelCase, e.g. ImagePullBackOff, CrashLoopBackOff or Unschedulable.
	Reason string
	// Message names the pod and container and says what the kubelet or scheduler said.
	Message string
}

// waitingIsNormal are waiting reasons every starting container goes through.
var waitingIsNormal = map[string]bool{"": true, "ContainerCreating": true, "PodInitializing": true}

// conditionReason is what a condition reason must look like (metav1.Condition's pattern).
var conditionReason = regexp.MustCompile(`^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`)

// FailureOf reports the first failure among pods (by pod and container name, so the report
// stays the same while the failure does), and how many pods fail; nil when none does.
func FailureOf(pods []corev1.Pod) (*PodFailure, int) {
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	var first *PodFailure
	n := 0
	for i := range pods {
		f := podFailure(&pods[i])
		if f == nil {
			continue
		}
		n++
		if first == nil {
			first = f
		}
	}
	return first, n
}

func podFailure(p *corev1.Pod) *PodFailure {
	if p.DeletionTimestamp != nil {
		return nil
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason != "" {
			return failure(c.Reason, fmt.Sprintf("pod %s: %s", p.Name, c.Message))
		}
	}
	statuses := append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...)
	for _, s := range statuses {
		if w := s.State.Waiting; w != nil && !waitingIsNormal[w.Reason] {
			return failure(w.Reason, fmt.Sprintf("pod %s, container %s: %s", p.Name, s.Name, orReason(w.Message, w.Reason)))
		}
		// A container that runs but has not passed its startup probe is either a second
		// from answering or answering wrongly (a health check on a path that is not
		// there); the kubelet says which only in events, so both read as "not passed yet".
		if s.State.Running != nil && !s.Ready && s.Started != nil && !*s.Started {
			return failure(mooringv1.ReasonHealthCheckNotPassed, fmt.Sprintf("pod %s, container %s runs but has not passed its health check yet (kubectl describe pod %s shows the probe's answer)",
				p.Name, s.Name, p.Name))
		}
		if t := s.State.Terminated; t != nil && t.ExitCode != 0 && p.Status.Phase != corev1.PodSucceeded {
			return failure(orReason(t.Reason, "Error"), fmt.Sprintf("pod %s, container %s exited with code %d: %s",
				p.Name, s.Name, t.ExitCode, orReason(t.Message, t.Reason)))
		}
	}
	return nil
}

func failure(reason, message string) *PodFailure {
	if !conditionReason.MatchString(reason) {
		reason = mooringv1.ReasonPodsFailing
	}
	return &PodFailure{Reason: reason, Message: strings.TrimSpace(message)}
}

func orReason(s, fallback string) string {
	if s == "" {
		return fallback
	}
	return s
}

// ListPods reads the pods of one owner from the manager's cache by its selector labels,
// found through engine.OwnerIndex.
func ListPods(ctx context.Context, c client.Reader, namespace string, selector map[string]string) ([]corev1.Pod, error) {
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace(namespace), client.MatchingLabels(selector),
		engine.ChildrenOf(selector[mooringv1.ComponentLabel], selector[mooringv1.InstanceLabel])); err != nil {
		return nil, fmt.Errorf("list pods: %w", err)
	}
	return pods.Items, nil
}

// WatchPods makes a kind's controller reconcile an owner when one of its pods changes:
// a pod's failure reason changes without its Deployment's status changing.
func WatchPods(component string) func(*builder.Builder) {
	return func(b *builder.Builder) {
		b.Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			l := o.GetLabels()
			if l[mooringv1.ComponentLabel] != component || l[mooringv1.InstanceLabel] == "" {
				return nil
			}
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: l[mooringv1.InstanceLabel]}}}
		}))
	}
}

// TrimPod is the cache transform for pods: it keeps the metadata and the status a failure
// report reads, and drops the spec and the rest, which Mooring never reads.
func TrimPod(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	p.ManagedFields = nil
	p.Annotations = nil
	p.Spec = corev1.PodSpec{}
	p.Status = corev1.PodStatus{
		Phase: p.Status.Phase,
		// DatabaseCluster asks each database pod's instance manager at this address.
		PodIP:                 p.Status.PodIP,
		Conditions:            p.Status.Conditions,
		ContainerStatuses:     p.Status.ContainerStatuses,
		InitContainerStatuses: p.Status.InitContainerStatuses,
	}
	return p, nil
}
