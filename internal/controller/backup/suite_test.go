package backup_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/mooringhq/mooring/internal/testutil"
)

var env *testutil.Env

func TestMain(m *testing.M) {
	var err error
	if env, err = testutil.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stop envtest:", err)
	}
	os.Exit(code)
}
