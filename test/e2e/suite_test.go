package e2e

import (
	"testing"

	"github.com/mooringhq/mooring/internal/testutil/clusterenv"
)

// suite is the cluster and operator every test of the package shares.
var suite *clusterenv.Env

func TestMain(m *testing.M) {
	// The restart test counts the operator's writes to its own namespace's objects.
	clusterenv.Main(m, &suite, clusterenv.Options{Name: "e2e", AuditOperatorWrites: true})
}
