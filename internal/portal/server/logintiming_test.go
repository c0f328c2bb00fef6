package server_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/mooringhq/mooring/internal/devenv"
	"github.com/mooringhq/mooring/internal/portal/models"
	"github.com/mooringhq/mooring/internal/portal/portaltest"
)

// requestLog records the API requests of a portal, as "METHOD path".
type requestLog struct {
	mu   sync.Mutex
	reqs []string
}

func (l *requestLog) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		l.mu.Lock()
		l.reqs = append(l.reqs, r.Method+" "+r.URL.Path)
		l.mu.Unlock()
		return rt.RoundTrip(r)
	})
}

// take returns the requests so far whose "METHOD path" starts with prefix, and forgets all.
func (l *requestLog) take(prefix string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, r := range l.reqs {
		if strings.HasPrefix(r, prefix) {
			out = append(out, r)
		}
	}
	l.reqs = nil
	return out
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestLoginDoesTheSameAPIWorkForUnknownUsers: a login of an unknown user reads a
// password Secret, as one of a known user does, before its hash check, so the API
// server's round trips do not tell the two apart (the hash check alone is not enough:
// a known user's extra Secret read would).
func TestLoginDoesTheSameAPIWorkForUnknownUsers(t *testing.T) {
	api := &requestLog{}
	p := newPortal(t, func(c *Config) {
		rc := rest.CopyConfig(c.Rest)
		rc.WrapTransport = api.wrap
		c.Rest = rc
	})
	u, _ := p.Register("timing")
	secretReads := "GET /api/v1/namespaces/" + devenv.PortalNamespace + "/secrets/portal-password-"
	for name, username := range map[string]string{"known user, wrong password": u.Username, "unknown user": "nobody-" + u.Username} {
		api.take("")
		r := p.Do("POST", "/api/v1/login", "", models.LoginRequest{Username: username, Password: "wrong password!"})
		portaltest.Expect(t, r, http.StatusUnauthorized, name)
		// Read at once: failed logins are counted after the answer, but with no Secret read.
		if reads := api.take(secretReads); len(reads) != 1 {
			t.Errorf("%s: want one read of a password Secret, got %v", name, reads)
		}
	}
}
