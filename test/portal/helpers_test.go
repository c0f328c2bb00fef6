package portal

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/mooringhq/mooring/internal/portal/portaltest"
	"github.com/mooringhq/mooring/internal/testutil"
)

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }

// watchDelay bounds how long a logout, revocation or password change made on one
// replica takes to end the session on another: the delay of the watch of Users that
// authentication reads (docs/performance.md), with room for a loaded machine.
const watchDelay = 10 * time.Second

// expectEndedOn waits until the replica c refuses the access token (401), as a change
// made on another replica reaches c through its watch of Users.
func expectEndedOn(t *testing.T, c *portaltest.Client, token, what string) {
	t.Helper()
	testutil.Eventually(t, watchDelay, what, func() error {
		r, err := c.TryDo("GET", "/api/v1/users/me", token, nil)
		if err != nil {
			return err
		}
		if r.Status != http.StatusUnauthorized {
			return errorf("GET /api/v1/users/me answered %d, want 401", r.Status)
		}
		return nil
	})
}
