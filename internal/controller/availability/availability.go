package availability

import (
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/mooringhq/mooring/internal/engine"
)

// SpreadOverNodes prefers one pod per node for the pods of one object (the object's
// selector labels, its instance label among them, so another object's pods never count):
// a topology spread constraint on kubernetes.io/hostname with maxSkew 1 that the
// scheduler scores but never waits for (ScheduleAnyway), so a cluster with fewer nodes
// than pods still runs them all, as evenly as it can.
//
// A spread constraint rather than CloudNativePG's preferred pod anti-affinity: both are
// soft, but the constraint also balances more pods than nodes (3 on 2 nodes: 2 and 1, where
// anti-affinity only avoids sharing while it can), and the scheduler computes it per
// topology domain instead of per pod pair, which Kubernetes' documentation warns is costly
// in large clusters. Setting it replaces the scheduler's default spread for these pods,
// whose zone term (maxSkew 5) changes nothing for the few pods an object has.
func SpreadOverNodes(component, name string) []corev1.TopologySpreadConstraint {
	return []corev1.TopologySpreadConstraint{{
		MaxSkew:           1,
		TopologyKey:       corev1.LabelHostname,
		WhenUnsatisfiable: corev1.ScheduleAnyway,
		LabelSelector:     &metav1.LabelSelector{MatchLabels: engine.SelectorLabels(component, name)},
	}}
}

// DisruptionBudget lets voluntary disruptions (node drains, evictions) take at most one
// of the object's pods at a time: while one is not ready (evicted, starting, failing), no
// ready one may be evicted. It is named after the object.
func DisruptionBudget(component, name string) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: engine.Labels(component, name)},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			Selector:       &metav1.LabelSelector{MatchLabels: engine.SelectorLabels(component, name)},
		},
	}
}
