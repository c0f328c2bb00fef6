package e2e

import (
	"context"
	"testing"

	"github.com/mooringhq/mooring/internal/testutil/clusterenv"
)

// suite is the cluster and operator every test of the package shares.
var suite *clusterenv.Env

func TestMain(m *testing.M) {
	clusterenv.Main(m, &suite, clusterenv.Options{Name: "e2e"})
}

// startOperator runs the operator binary against the suite's cluster.
func startOperator(ctx context.Context, extraArgs ...string) error {
	return suite.StartOperator(ctx, extraArgs...)
}

func stopOperator() error { return suite.StopOperator() }
