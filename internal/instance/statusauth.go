package instance

import (
	"context"
	"crypto/pbkdf2"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"strings"
	"sync"
	"time"
)

// /status tells the cluster's roles, positions and faults; only the operator reads it.
// The operator proves it is the operator with a bearer token derived from the superuser
// password, which both already have (the operator in the Secret <name>-admin, the
// manager as its mounted file): no further Secret, and nothing a pod of the cluster's
// network can compute without the password. The derivation is slow (PBKDF2), so a token
// seen on the wire (the endpoint is plain HTTP) is no cheap way to test guesses at the
// password; each side derives it once per password.

// statusTokenIterations is the PBKDF2 cost of the token, as for the admin fingerprint.
const statusTokenIterations = 100_000

// statusCacheTTL: /status answers from one observation for this long, so that many
// requests cost the server one session a second at most.
const statusCacheTTL = time.Second

// StatusToken is the bearer token /status wants from a cluster whose superuser password
// is adminPassword.
func StatusToken(adminPassword string) string {
	k, err := pbkdf2.Key(sha256.New, adminPassword, []byte("mooring.dev/instance-status"), statusTokenIterations, 32)
	if err != nil {
		return "" // only for parameters FIPS mode refuses; then no token matches
	}
	return hex.EncodeToString(k)
}

// tokenCache remembers the token of the password last read.
type tokenCache struct {
	mu       sync.Mutex
	password string
	token    string
}

func (c *tokenCache) tokenFor(password string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.token == "" || c.password != password {
		c.password, c.token = password, StatusToken(password)
	}
	return c.token
}

// authorized reports whether r carries the token of the mounted superuser password. The
// file is read at every request (it is small): the kubelet updates it when the Secret
// changes.
func (m *manager) authorized(r *http.Request) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || got == "" {
		return false
	}
	password, err := m.cfg.AdminPassword()
	if err != nil {
		return false
	}
	want := m.tokens.tokenFor(password)
	return want != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// statusCache keeps the last observation for statusCacheTTL.
type statusCache struct {
	mu sync.Mutex
	at time.Time
	s  Status
}

// observed is the status with the running server's readiness and observation, from the
// cache while it is fresh. Concurrent requests wait for one observation.
func (m *manager) observed(ctx context.Context) Status {
	c := &m.statusCache
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.at.IsZero() && time.Since(c.at) < statusCacheTTL {
		return c.s
	}
	s := m.st.get()
	if s.Running {
		ctx, cancel := context.WithTimeout(ctx, 4*time.Second)
		defer cancel()
		s.Ready = m.engine.Ready(ctx) == nil && m.configured.Load()
		if s.Ready {
			if o, err := m.engine.Observe(ctx); err == nil {
				s.Observation = &o
			} else {
				s.Error = err.Error()
			}
		}
	}
	c.at, c.s = time.Now(), s
	return s
}
