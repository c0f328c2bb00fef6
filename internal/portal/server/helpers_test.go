package server_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/mooringhq/mooring/internal/portal/server"
	"github.com/mooringhq/mooring/internal/testutil"
)

// Config is server.Config, short for the tests' option functions.
type Config = server.Config

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }

// watchDelay bounds how long a logout, revocation or password change made on one
// replica takes to end the session on another: the delay of the watch of Users that
// authentication reads (docs/performance.md), with room for a loaded test machine.
const watchDelay = 10 * time.Second

// expectEndedOn waits until p refuses the access token (401), as a change made on
// another replica reaches p through its watch of Users.
func expectEndedOn(t *testing.T, p *portal, token, what string) {
	t.Helper()
	testutil.Eventually(t, watchDelay, what+" refused on another replica", func() error {
		r, err := p.TryDo("GET", "/api/v1/users/me", token, nil)
		if err != nil {
			return err
		}
		if r.Status != http.StatusUnauthorized {
			return errorf("GET /api/v1/users/me answered %d, want 401", r.Status)
		}
		return nil
	})
}
