package server_test

import (
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"testing"

	"github.com/mooringhq/mooring/internal/portal/portaltest"
)

// TestLogoutEndsTheSession: POST /api/v1/logout ends the caller's session on the
// server, so its refresh and access tokens stop working; other sessions go on.
func TestLogoutEndsTheSession(t *testing.T) {
	p := newPortal(t, nil)
	u, pw := p.Register("logout")
	mine, other := p.Login(u.Username, pw), p.Login(u.Username, pw)

	portaltest.Expect(t, p.Do("POST", "/api/v1/logout", "", nil), http.StatusUnauthorized, "log out without a token")
	portaltest.Expect(t, p.Do("POST", "/api/v1/logout", mine.AccessToken, nil), http.StatusNoContent, "log out")
	portaltest.Expect(t, p.Refresh(mine.RefreshToken), http.StatusUnauthorized, "the refresh token after logging out")
	portaltest.Expect(t, p.Do("GET", "/api/v1/users/me", mine.AccessToken, nil), http.StatusUnauthorized, "the access token after logging out")
	portaltest.Expect(t, p.Do("GET", "/api/v1/users/me", other.AccessToken, nil), http.StatusOK, "another session's access token")
	p.Refresh(other.RefreshToken).Tokens(t, "another session's refresh")
	if n := len(sessionsOf(t, u.Username)); n != 1 {
		t.Fatalf("after logging out one of two sessions want 1 left, got %d", n)
	}
}

// TestUILogoutEndsTheSession: logging out of the web UI ends the session on the
// server, not just in the browser: a copy of its refresh cookie is worth nothing.
func TestUILogoutEndsTheSession(t *testing.T) {
	p := newPortal(t, nil)
	u, pw := p.Register("uilogout")
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	browser := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	cookie := func(name string) string {
		base, _ := url.Parse(p.URL + "/ui/")
		for _, c := range jar.Cookies(base) {
			if c.Name == name {
				return c.Value
			}
		}
		return ""
	}
	post := func(path string, form url.Values) int {
		form.Set("csrf", cookie("mooring_csrf"))
		resp, err := browser.PostForm(p.URL+path, form)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	resp, err := browser.Get(p.URL + "/ui/login")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if code := post("/ui/login", url.Values{"username": {u.Username}, "password": {pw}}); code != http.StatusSeeOther {
		t.Fatalf("log in to the UI: %d", code)
	}
	// As a browser follows the redirect: a page of the session gives it the session's
	// CSRF token, which the logout form needs.
	if resp, err = browser.Get(p.URL + "/ui/"); err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	refresh := cookie("mooring_refresh")
	if refresh == "" || len(sessionsOf(t, u.Username)) != 1 {
		t.Fatal("logging in to the UI left no refresh cookie or no session")
	}
	if code := post("/ui/logout", url.Values{}); code != http.StatusSeeOther {
		t.Fatalf("log out of the UI: %d", code)
	}
	if cookie("mooring_refresh") != "" {
		t.Fatal("the refresh cookie survived logging out")
	}
	portaltest.Expect(t, p.Refresh(refresh), http.StatusUnauthorized, "the UI's refresh token after logging out")
	if ss := sessionsOf(t, u.Username); len(ss) != 0 {
		t.Fatalf("the session is still in the User's status: %v", ss)
	}
}
