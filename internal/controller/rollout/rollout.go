package rollout

import (
	"fmt"
	"regexp"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/internal/engine"
)

// Phase is the one-word summary of a rollout. Its values are the ones the phase enums of
// Deployment-backed kinds use (Pending, Running, NotReady), so a kind converts it with a
// plain type conversion; the kind's Error phase is the engine's to set, never a rollout's.
type Phase string

// The phases a rollout can be in.
const (
	// Pending: no replica is available yet.
	Pending Phase = "Pending"
	// Running: the rollout is complete and every requested replica is available.
	Running Phase = "Running"
	// NotReady: some, but not all, requested replicas are available, or a rollout is
	// under way.
	NotReady Phase = "NotReady"
)

// State is what a Deployment says about the pods of the object that owns it.
type State struct {
	// Want is the number of replicas the owner's spec asks for.
	Want int32
	// Replicas, Updated, Available and Unavailable are the Deployment's status counts.
	Replicas, Updated, Available, Unavailable int32
	// Observed is true once the Deployment controller has seen the latest Deployment spec.
	Observed bool
	// DeadlineExceeded is true when the Deployment reports ProgressDeadlineExceeded.
	DeadlineExceeded bool
	// ReplicaFailure is the Deployment's ReplicaFailure condition while it is True: its
	// ReplicaSet cannot create pods (an exceeded quota, pods forbidden by admission).
	// Nil otherwise.
	ReplicaFailure *ReplicaFailure
	// Failure is why pods fail, from WithPods; nil when none does.
	Failure *PodFailure
	// Failing is how many pods fail.
	Failing int
}

// WithPods adds what the owner's pods say to s: the first failure and how many fail.
func (s State) WithPods(pods []corev1.Pod) State {
	s.Failure, s.Failing = FailureOf(pods)
	return s
}

// Observe reads d's status for an owner that wants the given number of replicas.
func Observe(want int32, d *appsv1.Deployment) State {
	s := State{
		Want:        want,
		Replicas:    d.Status.Replicas,
		Updated:     d.Status.UpdatedReplicas,
		Available:   d.Status.AvailableReplicas,
		Unavailable: d.Status.UnavailableReplicas,
		Observed:    d.Status.ObservedGeneration >= d.Generation,
	}
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentProgressing && c.Status == corev1.ConditionFalse && c.Reason == "ProgressDeadlineExceeded" {
			s.DeadlineExceeded = true
		}
		if c.Type == appsv1.DeploymentReplicaFailure && c.Status == corev1.ConditionTrue {
			s.ReplicaFailure = &ReplicaFailure{Reason: c.Reason, Message: stablePodName.ReplaceAllString(c.Message, "pods are")}
		}
	}
	return s
}

// ReplicaFailure is why a Deployment's ReplicaSet cannot create pods, as the Deployment
// reports it.
type ReplicaFailure struct {
	// Reason is the condition's reason, e.g. FailedCreate.
	Reason string
	// Message is the condition's message, e.g. the quota or admission error, with the name
	// of the pod that could not be created left out: it is new on every retry, and the
	// owner's status would change with it.
	Message string
}

// stablePodName matches the name of the pod a create error names ("pods \"web-7d9c-x2\" is
// forbidden: ...").
var stablePodName = regexp.MustCompile(`pods "[^"]*" is`)

func (f *ReplicaFailure) describe() string {
	reason := f.Reason
	if reason == "" {
		reason = "ReplicaFailure"
	}
	return fmt.Sprintf("the Deployment cannot create pods (%s): %s", reason, f.Message)
}

// Complete is the same test `kubectl rollout status` makes: the latest spec is observed
// and exactly the wanted replicas exist, all updated and available.
func (s State) Complete() bool {
	return s.Observed && s.Updated == s.Want && s.Replicas == s.Want && s.Available == s.Want && s.Unavailable == 0
}

// Condition is the status, reason and message of one condition.
type Condition struct {
	Status  metav1.ConditionStatus
	Reason  string
	Message string
}

// Result is what a rollout state means for the owner's status.
type Result struct {
	Phase       Phase
	Ready       Condition
	Progressing Condition
}

func cond(status metav1.ConditionStatus, reason, message string) Condition {
	return Condition{Status: status, Reason: reason, Message: message}
}

// progressChecks decide the Progressing condition; the first that matches wins.
var progressChecks = []func(s State) (Condition, bool){
	func(s State) (Condition, bool) {
		return cond(metav1.ConditionTrue, mooringv1.ReasonDeploymentPending,
			"Waiting for the Deployment controller to observe the latest spec."), !s.Observed
	},
	func(s State) (Condition, bool) {
		if s.ReplicaFailure == nil {
			return Condition{}, false
		}
		return cond(metav1.ConditionFalse, mooringv1.ReasonReplicaFailure, "Rollout blocked: "+s.ReplicaFailure.describe()), true
	},
	func(s State) (Condition, bool) {
		const msg = "The rollout made no progress within its deadline; check the pods' events " +
			"(kubectl describe pods) for image pull or scheduling errors."
		return cond(metav1.ConditionFalse, mooringv1.ReasonProgressDeadlineExceed, msg), s.DeadlineExceeded
	},
	func(s State) (Condition, bool) {
		return cond(metav1.ConditionFalse, mooringv1.ReasonRolloutComplete,
			fmt.Sprintf("Rollout complete: %d of %d replicas updated and available.", s.Available, s.Want)), s.Complete()
	},
	func(s State) (Condition, bool) {
		return cond(metav1.ConditionTrue, mooringv1.ReasonRollingOut,
			fmt.Sprintf("Rolling out: %d of %d replicas updated, %d available.", s.Updated, s.Want, s.Available)), true
	},
}

// readyChecks decide the phase and the Ready condition; the first that matches wins.
var readyChecks = []func(s State) (Phase, Condition, bool){
	func(s State) (Phase, Condition, bool) {
		return Running, cond(metav1.ConditionTrue, mooringv1.ReasonAllReplicasAvailable,
			fmt.Sprintf("%d of %d replicas available.", s.Available, s.Want)), s.Complete()
	},
	func(s State) (Phase, Condition, bool) {
		if s.ReplicaFailure == nil {
			return "", Condition{}, false
		}
		phase := NotReady
		if s.Available == 0 {
			phase = Pending
		}
		return phase, cond(metav1.ConditionFalse, mooringv1.ReasonReplicaFailure, fmt.Sprintf("%d of %d replicas available; %s",
			s.Available, s.Want, s.ReplicaFailure.describe())), true
	},
	func(s State) (Phase, Condition, bool) {
		if s.Failure == nil {
			return "", Condition{}, false
		}
		phase := NotReady
		if s.Available == 0 {
			phase = Pending
		}
		return phase, cond(metav1.ConditionFalse, s.Failure.Reason, fmt.Sprintf("%d of %d replicas available; %d pods failing, first %s",
			s.Available, s.Want, s.Failing, s.Failure.Message)), true
	},
	func(s State) (Phase, Condition, bool) {
		return Pending, cond(metav1.ConditionFalse, mooringv1.ReasonReplicasUnavailable,
			fmt.Sprintf("No replica available yet (0 of %d); the Progressing condition says why.", s.Want)), s.Available == 0
	},
	func(s State) (Phase, Condition, bool) {
		return NotReady, cond(metav1.ConditionFalse, mooringv1.ReasonReplicasUnavailable,
			fmt.Sprintf("%d of %d replicas available.", s.Available, s.Want)), true
	},
}

// Evaluate runs the ordered checks over s. Each list ends in a check that always matches,
// so every field of the result is set.
func Evaluate(s State) Result {
	var r Result
	for _, check := range progressChecks {
		if c, ok := check(s); ok {
			r.Progressing = c
			break
		}
	}
	for _, check := range readyChecks {
		if phase, c, ok := check(s); ok {
			r.Phase, r.Ready = phase, c
			break
		}
	}
	return r
}

// SetConditions sets obj's Ready and Progressing conditions from r.
func (r Result) SetConditions(obj engine.Object) {
	engine.SetCondition(obj, mooringv1.ConditionProgressing, r.Progressing.Status, r.Progressing.Reason, r.Progressing.Message)
	engine.SetCondition(obj, mooringv1.ConditionReady, r.Ready.Status, r.Ready.Reason, r.Ready.Message)
}
