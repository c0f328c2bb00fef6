package database_test

import (
	"testing"

	"github.com/mooringhq/mooring/internal/testutil"
	"github.com/mooringhq/mooring/internal/testutil/dbserver"
)

// env is one API server for the package; every test works in its own namespace.
var env *testutil.Env

// TestMain runs the tests with a plain Debian machine's PATH under make test, for the
// scripts' tests against real servers (dbserver.UsePath).
func TestMain(m *testing.M) {
	dbserver.UsePath()
	testutil.Main(m, func(e *testutil.Env) { env = e })
}
