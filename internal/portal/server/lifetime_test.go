package server_test

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/mooringhq/mooring/internal/portal/portaltest"
)

// clock is a hand-moved clock shared by the portals of one test, so hours of session
// life pass without waiting.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *clock) advance(d time.Duration) { c.mu.Lock(); defer c.mu.Unlock(); c.t = c.t.Add(d) }

// expiryOf reads a token's exp claim (the portal verified it already; this only looks).
func expiryOf(t *testing.T, token string) time.Time {
	t.Helper()
	claims := &jwt.RegisteredClaims{}
	if _, _, err := jwt.NewParser().ParseUnverified(token, claims); err != nil || claims.ExpiresAt == nil {
		t.Fatalf("read the token's expiry: %v", err)
	}
	return claims.ExpiresAt.Time
}

// TestSessionsEndAtTheirMaximumLifetime: a session that keeps refreshing well within
// the refresh lifetime still ends at login + --session-max-lifetime. No token of it
// expires later, and a refresh at the end answers the generic 401.
func TestSessionsEndAtTheirMaximumLifetime(t *testing.T) {
	clk := &clock{t: time.Now()}
	const refreshTTL, maxLife, every = time.Hour, 3 * time.Hour, 50 * time.Minute
	// Access tokens outliving the session too, were they not capped.
	p := newPortal(t, func(c *Config) {
		c.AccessTTL, c.RefreshTTL, c.SessionMaxLifetime, c.Now = 2*time.Hour, refreshTTL, maxLife, clk.now
	})
	u, pw := p.Register("lifetime")
	login := clk.now()
	end := login.Add(maxLife)
	tok := p.Login(u.Username, pw)
	if ss := sessionsOf(t, u.Username); len(ss) != 1 || ss[0].StartedAt == nil || ss[0].StartedAt.Unix() != login.Unix() {
		t.Fatalf("a login must record when its session started (%s): %+v", login, ss)
	}
	capped := false
	for clk.now().Add(every).Before(end) {
		clk.advance(every)
		tok = p.Refresh(tok.RefreshToken).Tokens(t, "a refresh within the session's lifetime")
		// Uncapped, this refresh token would expire a full refresh lifetime from now.
		exp := expiryOf(t, tok.RefreshToken)
		if exp.After(end) {
			t.Fatalf("refresh at login+%s: the new refresh token expires at login+%s, past the session's end at login+%s",
				clk.now().Sub(login), exp.Sub(login), maxLife)
		}
		if a := expiryOf(t, tok.AccessToken); a.After(end) {
			t.Fatalf("refresh at login+%s: the access token expires at login+%s, past the session's end", clk.now().Sub(login), a.Sub(login))
		}
		if ss := sessionsOf(t, u.Username); len(ss) != 1 || ss[0].ExpiresAt.After(end) {
			t.Fatalf("refresh at login+%s: the session must not outlast login+%s: %+v", clk.now().Sub(login), maxLife, ss)
		}
		capped = capped || clk.now().Add(refreshTTL).After(end)
	}
	if !capped {
		t.Fatal("no refresh came close enough to the end for the cap to matter; the test proves nothing")
	}
	portaltest.Expect(t, p.Do("GET", "/api/v1/users/me", tok.AccessToken, nil), http.StatusOK, "the access token before the session's end")

	clk.advance(end.Sub(clk.now()))
	r := p.Refresh(tok.RefreshToken)
	portaltest.Expect(t, r, http.StatusUnauthorized, "a refresh at the session's maximum lifetime")
	if e := r.Error(t); e.Message != "invalid or expired token" {
		t.Fatalf("a refresh after the session's end must get the generic token error, got %+v", e)
	}
	portaltest.Expect(t, p.Do("GET", "/api/v1/users/me", tok.AccessToken, nil), http.StatusUnauthorized, "the access token at the session's end")
	// A new login starts a new session with its own full lifetime.
	fresh := p.Login(u.Username, pw)
	portaltest.Expect(t, p.Do("GET", "/api/v1/users/me", fresh.AccessToken, nil), http.StatusOK, "a new login after the session's end")
}

// TestLoweredMaximumLifetimeEndsOlderSessions: a replica started with a shorter
// --session-max-lifetime refuses a refresh token issued under the longer one once the
// session is older than the new maximum, and removes the session from the User.
func TestLoweredMaximumLifetimeEndsOlderSessions(t *testing.T) {
	clk := &clock{t: time.Now()}
	// Hour-long access tokens, so only the session's end can refuse the last one.
	long := newPortal(t, func(c *Config) { c.AccessTTL, c.SessionMaxLifetime, c.Now = time.Hour, 10*time.Hour, clk.now })
	short := newPortal(t, func(c *Config) { c.AccessTTL, c.SessionMaxLifetime, c.Now = time.Hour, time.Hour, clk.now })
	u, pw := long.Register("lowered")
	tok := long.Login(u.Username, pw)
	clk.advance(50 * time.Minute)
	tok = long.Refresh(tok.RefreshToken).Tokens(t, "a refresh under the long lifetime")

	clk.advance(20 * time.Minute) // 70 minutes after login: past the short maximum
	portaltest.Expect(t, long.Do("GET", "/api/v1/users/me", tok.AccessToken, nil), http.StatusOK, "the access token before the refresh")
	r := short.Refresh(tok.RefreshToken)
	portaltest.Expect(t, r, http.StatusUnauthorized, "a refresh past the lowered maximum lifetime")
	if e := r.Error(t); e.Message != "invalid or expired token" {
		t.Fatalf("want the generic token error, got %+v", e)
	}
	if ss := sessionsOf(t, u.Username); len(ss) != 0 {
		t.Fatalf("the session past its maximum lifetime must be ended, still in the status: %+v", ss)
	}
	portaltest.Expect(t, long.Do("GET", "/api/v1/users/me", tok.AccessToken, nil), http.StatusUnauthorized, "the ended session's access token")
}
