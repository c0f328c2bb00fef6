package dump

import (
	"os"
	"testing"

	"github.com/mooringhq/mooring/internal/testutil/dbserver"
)

// TestMain runs the scripts' tests against real servers with a plain Debian machine's
// PATH under make test (dbserver.UsePath).
func TestMain(m *testing.M) {
	dbserver.UsePath()
	os.Exit(m.Run())
}
