package faults

import (
	"context"
	"testing"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/mooringhq/mooring/internal/testutil/clusterenv"
)

// suite is the package's cluster. Its operator is started by the tests that need one
// (ensureOperator), since several tests begin with it stopped or run their own.
var suite *clusterenv.Env

var ctx = context.Background()

func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard()) // the test's own clients log nothing worth reading
	clusterenv.Main(m, &suite, clusterenv.Options{Name: "faults", NoOperator: true})
}

// ensureOperator starts the suite's operator unless it runs. One that a test killed and
// left unreaped (it failed in between) counts as not running.
func ensureOperator(t *testing.T, extraArgs ...string) {
	t.Helper()
	if op := suite.Operator; op != nil {
		select {
		case err := <-op.Exited():
			t.Logf("the operator had exited (%v); starting it again", err)
			stopOperator(t)
		default:
			return
		}
	}
	if err := suite.StartOperator(ctx, extraArgs...); err != nil {
		t.Fatal(err)
	}
}

// stopOperator stops the suite's operator if it runs.
func stopOperator(t *testing.T) {
	t.Helper()
	if err := suite.StopOperator(); err != nil {
		t.Fatal(err)
	}
}
