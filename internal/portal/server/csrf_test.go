package server_test

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"testing"
)

// uiBrowser is a cookie jar over the portal's web UI that does not follow redirects.
type uiBrowser struct {
	t *testing.T
	p *portal
	c *http.Client
}

func newUIBrowser(t *testing.T, p *portal) *uiBrowser {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &uiBrowser{t: t, p: p, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (b *uiBrowser) get(path string) int {
	b.t.Helper()
	resp, err := b.c.Get(b.p.URL + path)
	if err != nil {
		b.t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode
}

// token is the browser's CSRF cookie: the token the portal gave it.
func (b *uiBrowser) token() string {
	u, _ := url.Parse(b.p.URL + "/ui/")
	for _, c := range b.c.Jar.Cookies(u) {
		if c.Name == "mooring_csrf" {
			return c.Value
		}
	}
	return ""
}

// post sends form with tok as both the CSRF cookie and field.
func (b *uiBrowser) post(path, tok string, form url.Values) int {
	b.t.Helper()
	u, _ := url.Parse(b.p.URL + "/ui/")
	b.c.Jar.SetCookies(u, []*http.Cookie{{Name: "mooring_csrf", Value: tok, Path: "/ui"}})
	form.Set("csrf", tok)
	resp, err := b.c.PostForm(b.p.URL+path, form)
	if err != nil {
		b.t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode
}

// login logs in as a browser does: the login page, its form, the page it lands on.
func (b *uiBrowser) login(username, password string) {
	b.t.Helper()
	b.get("/ui/login")
	if code := b.post("/ui/login", b.token(), url.Values{"username": {username}, "password": {password}}); code != http.StatusSeeOther {
		b.t.Fatalf("log in to the UI: %d", code)
	}
	if code := b.get("/ui/"); code != http.StatusOK {
		b.t.Fatalf("the home page after logging in: %d", code)
	}
}

// TestUICSRFTokensBelongToTheSession: with real sessions and signing keys, a form post
// passes only with the token the portal derived from the browser's own session: a
// planted equal cookie and field ("a", or 43 random characters), a token of another
// session of the same user and the token of a session that has ended are refused.
func TestUICSRFTokensBelongToTheSession(t *testing.T) {
	p := newPortal(t, nil)
	u, pw := p.Register("uicsrf")
	b := newUIBrowser(t, p)
	b.login(u.Username, pw)
	random := make([]byte, 32)
	if _, err := rand.Read(random); err != nil {
		t.Fatal(err)
	}
	other := newUIBrowser(t, p)
	other.login(u.Username, pw)
	mine := b.token()
	for what, tok := range map[string]string{
		"a planted \"a\"":                  "a",
		"43 planted random characters":     base64.RawURLEncoding.EncodeToString(random),
		"the token of another session":     other.token(),
		"the token of this session, split": mine[:len(mine)/2],
	} {
		if code := b.post("/ui/account/email", tok, url.Values{"email": {"changed@example.com"}}); code != http.StatusForbidden {
			t.Errorf("%s as cookie and field: want 403, got %d", what, code)
		}
	}
	if code := b.post("/ui/account/email", mine, url.Values{"email": {"changed@example.com"}}); code != http.StatusSeeOther {
		t.Fatalf("the session's own token: want 303, got %d", code)
	}
	if code := b.post("/ui/logout", mine, url.Values{}); code != http.StatusSeeOther {
		t.Fatalf("log out: %d", code)
	}
	b.login(u.Username, pw)
	if b.token() == mine {
		t.Fatal("a new session got the token of the session that ended")
	}
	if code := b.post("/ui/account/email", mine, url.Values{"email": {"again@example.com"}}); code != http.StatusForbidden {
		t.Errorf("the token of a session that has ended: want 403, got %d", code)
	}
	if bytes.Contains(p.Do("GET", "/api/v1/users/me", p.Login(u.Username, pw).AccessToken, nil).Body, []byte("again@example.com")) {
		t.Error("a refused form changed the e-mail")
	}
}
