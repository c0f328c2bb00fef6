package e2e

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/mooringhq/mooring/internal/devenv"
	"github.com/mooringhq/mooring/internal/testutil"
	"github.com/mooringhq/mooring/internal/testutil/clusterenv"
)

// suite is the cluster and operator every test of the package shares.
var suite *clusterenv.Env

func TestMain(m *testing.M) {
	// The restart test counts the operator's writes to its own namespace's objects.
	clusterenv.Main(m, &suite, clusterenv.Options{Name: "e2e", AuditOperatorWrites: true})
}

// operatorExtra are the extra flags the running operator was started with: every test
// but the one that runs it otherwise expects the suite's operator with none.
var operatorExtra []string

// startOperator runs the operator binary against the suite's cluster.
func startOperator(ctx context.Context, extraArgs ...string) error {
	if err := suite.StartOperator(ctx, extraArgs...); err != nil {
		return err
	}
	operatorExtra = slices.Clone(extraArgs)
	return nil
}

func stopOperator() error { return suite.StopOperator() }

// ensureOperator leaves the suite's operator as the other tests expect it: running, with
// no extra flags, and its webhooks callable. A test that stops, kills or re-flags the
// operator registers it with t.Cleanup right then, so a failure halfway restores it too.
func ensureOperator(t *testing.T) {
	t.Helper()
	if op := suite.Operator; op != nil && len(operatorExtra) == 0 {
		select {
		case err := <-op.Exited():
			t.Logf("the operator had exited (%v); starting it again", err)
		default:
			return
		}
	}
	if err := stopOperator(); err != nil {
		t.Logf("stop the operator: %v", err) // a killed one reports how it died
	}
	if err := startOperator(context.Background()); err != nil {
		t.Fatalf("start the suite's operator again: %v", err)
	}
	testutil.Eventually(t, time.Minute, "webhooks callable", func() error {
		return devenv.WebhooksReady(context.Background(), suite.Config)
	})
}
