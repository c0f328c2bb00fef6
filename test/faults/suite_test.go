package faults

import (
	"context"
	"testing"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/mooringhq/mooring/internal/testutil/clusterenv"
)

// suite is the package's cluster. Its operator is started by the tests that need one
// (suite.EnsureOperator), since several tests begin with it stopped or run their own.
var suite *clusterenv.Env

var ctx = context.Background()

func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard()) // the test's own clients log nothing worth reading
	clusterenv.Main(m, &suite, clusterenv.Options{Name: "faults", NoOperator: true})
}

// stopOperator stops the suite's operator if it runs.
func stopOperator(t *testing.T) {
	t.Helper()
	if err := suite.StopOperator(); err != nil {
		t.Fatal(err)
	}
}
