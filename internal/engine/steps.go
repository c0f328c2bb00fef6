package engine

import (
	"context"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
)

// A flow with several ways out (keep a cluster's credentials in step, take a final
// snapshot before deletion) reads best as an ordered list of checks, each of which either
// lets the flow go on or ends it, having set the condition that says why: the first that
// ends it wins, like the status checks of the rollout package.

// Step is one check of an ordered flow (RunSteps).
type Step func(ctx context.Context) (Verdict, error)

// Verdict is what a Step decided: go on to the next step, or end the flow because what it
// is for is done, or because it must wait (for a watch event, or a while).
type Verdict struct {
	end, done bool
	after     time.Duration
}

// Next lets the flow go on to its next step.
var Next = Verdict{}

// Done ends the flow: what it is for is done.
func Done() Verdict { return Verdict{end: true, done: true} }

// Wait ends the flow until something changes: a watch event brings the object back, or,
// when after is not zero, the reconcile asks to run again after that long.
func Wait(after time.Duration) Verdict { return Verdict{end: true, after: after} }

// Done reports whether the flow is done (not waiting, not merely passed through).
func (v Verdict) Done() bool { return v.done }

// Result is the reconcile result the verdict asks for.
func (v Verdict) Result() ctrl.Result { return ctrl.Result{RequeueAfter: v.after} }

// RunSteps runs steps in order until one ends the flow or fails, and returns its verdict;
// Next when every step let the flow go on.
func RunSteps(ctx context.Context, steps ...Step) (Verdict, error) {
	for _, step := range steps {
		v, err := step(ctx)
		if err != nil || v.end {
			return v, err
		}
	}
	return Next, nil
}
