package clusterenv

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/mooringhq/mooring/internal/devenv"
	"github.com/mooringhq/mooring/internal/testutil/poll"
)

// EnsureOperator leaves the Env's operator as a test expects to find it: running, with
// exactly extraArgs as its extra flags. One that exited (a test killed it and failed
// before starting it again) counts as not running; one that runs with other flags (a
// test re-flagged it) is stopped. Either is started again with extraArgs. Parallel tests
// may call it: one starts the operator, the others find it running.
//
// A test that stops, kills or re-flags the operator calls it from t.Cleanup right then,
// so that a failure halfway leaves the operator as the next test expects it too.
func (e *Env) EnsureOperator(t testing.TB, extraArgs ...string) {
	t.Helper()
	e.operatorMu.Lock()
	defer e.operatorMu.Unlock()
	if op := e.Operator; op != nil {
		select {
		case err := <-op.Exited():
			t.Logf("the operator had exited (%v); starting it again", err)
			if err := e.StopOperator(); err != nil {
				t.Logf("stop the exited operator: %v", err) // a killed one reports how it died
			}
		default:
			if slices.Equal(e.operatorExtra, extraArgs) {
				return
			}
			was := e.operatorExtra
			if err := e.StopOperator(); err != nil {
				t.Fatalf("stop the operator started with %v to start it with %v: %v", was, extraArgs, err)
			}
		}
	}
	if err := e.StartOperator(context.Background(), extraArgs...); err != nil {
		t.Fatalf("start the operator with %v: %v", extraArgs, err)
	}
}

// EnsureOperatorServing is EnsureOperator, then waits until the API server can call the
// operator's webhooks (their CA injected, their Service answering), also when the operator
// was running already: a test before may have broken them and left their repair to it.
func (e *Env) EnsureOperatorServing(t testing.TB, extraArgs ...string) {
	t.Helper()
	e.EnsureOperator(t, extraArgs...)
	poll.Eventually(t, time.Minute, "webhooks callable", func() error {
		return devenv.WebhooksReady(context.Background(), e.Config)
	})
}
