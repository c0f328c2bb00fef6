package dbserver

import (
	"fmt"
	"os"
	"testing"
)

// PathEnv is the variable that `make test` (and each tier's target) sets to the PATH of a
// plain Debian machine, /usr/sbin:/usr/bin:/sbin:/bin and Go's directory, for the
// packages whose tests start database servers. A machine's image may link a server into
// /usr/local/bin (this project's build machines link PostgreSQL's); Debian puts none on
// PATH. Running these tests with Debian's PATH on every run is what keeps a test from
// passing only where such links exist.
const PathEnv = "MOORING_DB_TEST_PATH"

// UsePath is the first call of the TestMain of a package whose tests start database
// servers (or run the instance manager on them): when PathEnv is set it becomes this test
// process's PATH, and so that of every server, script and manager the tests start.
// RequirePostgreSQL and RequireMariaDB fail a test whose package forgot it.
func UsePath() {
	if p := os.Getenv(PathEnv); p != "" {
		if err := os.Setenv("PATH", p); err != nil {
			fmt.Fprintln(os.Stderr, "set PATH:", err)
			os.Exit(2)
		}
	}
}

// checkPath fails t when PathEnv is set and is not the process's PATH: its package's
// TestMain does not call UsePath, so its tests would run with the machine's PATH.
func checkPath(t testing.TB) {
	t.Helper()
	if want := os.Getenv(PathEnv); want != "" && os.Getenv("PATH") != want {
		t.Fatalf("%s is %q but PATH is %q: call dbserver.UsePath first in this package's TestMain, so its database tests run with a plain Debian machine's PATH",
			PathEnv, want, os.Getenv("PATH"))
	}
}
