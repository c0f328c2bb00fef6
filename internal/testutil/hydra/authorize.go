package hydra

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// Authorize plays a person's part of a sign-in without a browser: from authURL (the
// authorization URL a client sent the browser to) through Hydra to the login page,
// where it types username, and on through consent. It returns the URL Hydra sends the
// browser back to: the client's redirect URL with the code and state (or an error).
// c must keep cookies (a cookie jar), as a browser does; its own redirect policy is
// not used.
func (h *Hydra) Authorize(t testing.TB, c *http.Client, authURL, username string) string {
	t.Helper()
	ours := func(u *url.URL) bool {
		return strings.HasPrefix(u.String(), h.Issuer+"/") || strings.HasPrefix(u.String(), h.LoginPage.URL+"/")
	}
	var back string
	walk := *c
	walk.CheckRedirect = func(req *http.Request, _ []*http.Request) error {
		if !ours(req.URL) {
			back = req.URL.String()
			return http.ErrUseLastResponse
		}
		return nil
	}
	resp, err := walk.Get(authURL)
	if err != nil {
		t.Fatalf("open the authorization URL: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if back != "" {
		return back // Hydra answered at once (an error for the client)
	}
	challenge := resp.Request.URL.Query().Get("login_challenge")
	if resp.StatusCode != http.StatusOK || challenge == "" {
		t.Fatalf("expected the login page, got %s at %s: %s", resp.Status, resp.Request.URL, body)
	}
	resp, err = walk.PostForm(h.LoginPage.URL+"/login", url.Values{"challenge": {challenge}, "username": {username}})
	if err != nil {
		t.Fatalf("sign in at the login page: %v", err)
	}
	body, _ = io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if back == "" {
		t.Fatalf("expected a redirect back to the client after login and consent, got %s at %s: %s", resp.Status, resp.Request.URL, body)
	}
	return back
}

// String names the provider in test output.
func (h *Hydra) String() string { return fmt.Sprintf("hydra at %s", h.Issuer) }
