package server_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	portalv1alpha1 "github.com/mooringhq/mooring/api/portal/v1alpha1"
	"github.com/mooringhq/mooring/internal/portal/models"
	"github.com/mooringhq/mooring/internal/portal/portaltest"
)

func sessionsOf(t *testing.T, username string) []portalv1alpha1.Session {
	t.Helper()
	u := &portalv1alpha1.User{}
	if err := admin.Get(context.Background(), client.ObjectKey{Name: username}, u); err != nil {
		t.Fatal(err)
	}
	return u.Status.Sessions
}

// TestRefreshTokensAreSingleUse: each refresh spends its token; presenting a spent one
// ends that login's session (its access and refresh tokens) on every replica, and
// leaves the user's other sessions alone.
func TestRefreshTokensAreSingleUse(t *testing.T) {
	a, b := newPortal(t, nil), newPortal(t, nil)
	u, pw := a.Register("rotate")
	first := a.Login(u.Username, pw)
	other := b.Login(u.Username, pw) // a second session, e.g. another device
	if n := len(sessionsOf(t, u.Username)); n != 2 {
		t.Fatalf("two logins: want 2 sessions in the User's status, got %d", n)
	}

	second := a.Refresh(first.RefreshToken).Tokens(t, "refresh")
	if second.RefreshToken == first.RefreshToken {
		t.Fatal("a refresh must return a new refresh token")
	}
	third := b.Refresh(second.RefreshToken).Tokens(t, "refresh the new token on the other replica")
	portaltest.Expect(t, a.Do("GET", "/api/v1/users/me", third.AccessToken, nil), http.StatusOK, "the newest access token")

	// The spent first token comes back: a replay. The session ends everywhere.
	portaltest.Expect(t, b.Refresh(first.RefreshToken), http.StatusUnauthorized, "a spent refresh token")
	portaltest.Expect(t, a.Refresh(third.RefreshToken), http.StatusUnauthorized, "the session's current refresh token after a reuse")
	// b ended the session; a learns it through its watch of Users.
	a.ExpectEnded(t, third.AccessToken, "the session's access token after a reuse")
	if !strings.Contains(logs.String(), "Refresh token reused") {
		t.Fatal("a reuse must be logged as a warning")
	}
	for _, tok := range []string{first.RefreshToken, second.RefreshToken, third.RefreshToken} {
		if strings.Contains(logs.String(), tok) {
			t.Fatal("a token in the logs")
		}
	}

	// The other session goes on.
	portaltest.Expect(t, b.Do("GET", "/api/v1/users/me", other.AccessToken, nil), http.StatusOK, "another session's access token")
	b.Refresh(other.RefreshToken).Tokens(t, "another session's refresh")
	if n := len(sessionsOf(t, u.Username)); n != 1 {
		t.Fatalf("after the reuse want only the other session left, got %d", n)
	}
}

// TestConcurrentRefreshOneWins presents one refresh token to two replicas at once,
// several times over: exactly one request wins each time, since both write the same
// User under its resourceVersion and the loser then sees the token spent.
func TestConcurrentRefreshOneWins(t *testing.T) {
	replicas := []*portal{newPortal(t, nil), newPortal(t, nil)}
	u, pw := replicas[0].Register("race")
	const rounds, perReplica = 5, 3
	for round := range rounds {
		tok := replicas[0].Login(u.Username, pw)
		var wg sync.WaitGroup
		codes := make(chan int, len(replicas)*perReplica)
		start := make(chan struct{})
		for _, p := range replicas {
			for range perReplica {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					r, err := p.TryDo("POST", "/api/v1/token/refresh", "", map[string]string{"refresh_token": tok.RefreshToken})
					if err != nil {
						t.Errorf("refresh: %v", err)
						return
					}
					codes <- r.Status
				}()
			}
		}
		close(start)
		wg.Wait()
		close(codes)
		won := 0
		for c := range codes {
			switch c {
			case http.StatusOK:
				won++
			case http.StatusUnauthorized:
			default:
				t.Errorf("round %d: a concurrent refresh answered %d", round, c)
			}
		}
		if won != 1 {
			t.Fatalf("round %d: %d of %d concurrent refreshes of one token won, want exactly 1", round, won, len(replicas)*perReplica)
		}
	}
}

// TestRefreshReuseInterval: two browser tabs refresh with the same token at once. For
// the reuse interval after a refresh, the token it spent gets the session's current
// refresh token again and the session goes on; an older token, or the same one later,
// is still a reuse that ends the session.
func TestRefreshReuseInterval(t *testing.T) {
	var ahead atomic.Int64 // how far the portals' clock runs ahead
	now := func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }
	const interval = time.Minute // long enough for a slow test machine
	withInterval := func(c *Config) { c.RefreshReuseInterval, c.Now = interval, now }
	a, b := newPortal(t, withInterval), newPortal(t, withInterval)
	u, pw := a.Register("tabs")

	// Both tabs at once, on two replicas, several times over: all keep the session.
	first := a.Login(u.Username, pw)
	for round := range 3 {
		var wg sync.WaitGroup
		got := make([]portaltest.Reply, 4)
		errs := make([]error, len(got))
		for i := range got {
			p := []*portal{a, b}[i%2]
			wg.Go(func() {
				got[i], errs[i] = p.TryDo("POST", "/api/v1/token/refresh", "", map[string]string{"refresh_token": first.RefreshToken})
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		var next string
		for i, r := range got {
			tok := r.Tokens(t, "a tab's refresh within the reuse interval")
			portaltest.Expect(t, a.Do("GET", "/api/v1/users/me", tok.AccessToken, nil), http.StatusOK, "a tab's new access token")
			if i == 0 {
				next = tok.RefreshToken
			}
		}
		if n := len(sessionsOf(t, u.Username)); n != 1 {
			t.Fatalf("round %d: want the one session kept, got %d", round, n)
		}
		first = models.TokenResponse{RefreshToken: next}
	}

	// The spent token again, within the interval: the current refresh token, whose
	// holder can go on refreshing.
	t1 := a.Login(u.Username, pw)
	t2 := a.Refresh(t1.RefreshToken).Tokens(t, "refresh")
	again := b.Refresh(t1.RefreshToken).Tokens(t, "the spent token within the reuse interval")
	t3 := a.Refresh(again.RefreshToken).Tokens(t, "refresh with the token the reuse answered")
	// t1 is two refreshes old now: a reuse, however soon.
	portaltest.Expect(t, a.Refresh(t1.RefreshToken), http.StatusUnauthorized, "a token two refreshes old")
	portaltest.Expect(t, a.Refresh(t3.RefreshToken), http.StatusUnauthorized, "the session after a reuse")
	portaltest.Expect(t, a.Refresh(t2.RefreshToken), http.StatusUnauthorized, "the session after a reuse")

	// The spent token after the interval: a reuse.
	t1 = a.Login(u.Username, pw)
	t2 = a.Refresh(t1.RefreshToken).Tokens(t, "refresh")
	ahead.Store(int64(interval + time.Second))
	portaltest.Expect(t, b.Refresh(t1.RefreshToken), http.StatusUnauthorized, "the spent token after the reuse interval")
	portaltest.Expect(t, a.Refresh(t2.RefreshToken), http.StatusUnauthorized, "the session after a reuse")
}
