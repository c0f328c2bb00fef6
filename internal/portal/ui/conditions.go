package ui

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// How a condition reads: the class of its line on the page.
const (
	healthy   = "healthy"
	unhealthy = "unhealthy"
	// pending is neither: work under way (Progressing=True), a state the user chose
	// (Paused=True), or not known yet (Unknown).
	pending = "pending"
)

// abnormalTrue are the condition types whose True is the problem (negative polarity),
// as Kubernetes' own Contested-like conditions: False or absent is healthy.
var abnormalTrue = []string{"Contested", "BindingEnvShadowed", "MigrationNeeded", "Degraded"}

// stuckRollout are the reasons of Progressing=False that mean the rollout stopped
// short, not that it finished (rollout.ReasonProgressDeadlineExceed and friends).
var stuckRollout = []string{"ProgressDeadlineExceeded", "ReplicaFailure", "ReconcileError", "InvalidSpec"}

// conditionHealth says how a condition reads, by its type's polarity: most are
// healthy when True (Ready, Available, Exposed, ...); Progressing is healthy when False
// because the rollout is complete and under way when True; the abnormal-true types are
// healthy when False.
func conditionHealth(typ, status, reason string) string {
	if status == string(metav1.ConditionUnknown) {
		return pending
	}
	isTrue := status == string(metav1.ConditionTrue)
	switch {
	case typ == "Progressing":
		if isTrue {
			return pending
		}
		if slices.Contains(stuckRollout, reason) {
			return unhealthy
		}
		return healthy
	case typ == "Paused":
		if isTrue {
			return pending
		}
		return healthy
	case slices.Contains(abnormalTrue, typ):
		if isTrue {
			return unhealthy
		}
		return healthy
	case isTrue:
		return healthy
	}
	return unhealthy
}
