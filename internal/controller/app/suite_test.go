package app_test

import (
	"testing"

	"github.com/mooringhq/mooring/internal/engine"
	"github.com/mooringhq/mooring/internal/testutil"
)

// env is one API server for the package; every test works in its own namespace.
var env *testutil.Env

func TestMain(m *testing.M) {
	// Read when the manager sets up its controllers, before any test runs.
	engine.DefaultContestBackoff = contestBackoff
	testutil.Main(m, func(e *testutil.Env) { env = e })
}
