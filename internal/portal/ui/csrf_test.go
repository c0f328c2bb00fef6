package ui

import (
	"crypto/rand"
	"encoding/base64"
	"net/http"
	"net/url"
	"testing"
)

// plant gives the browser the CSRF cookie value, as someone who can set cookies for the
// portal's host (a sibling subdomain, a plain-HTTP answer) could.
func (b *browser) plant(value string) {
	u, _ := url.Parse(b.h.srv.URL + Prefix + "/")
	b.c.Jar.SetCookies(u, []*http.Cookie{{Name: csrfCookie, Value: value, Path: Prefix}})
}

func random43(t *testing.T) string {
	t.Helper()
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// TestCSRFTokensCannotBePlanted: a form's token must be the one the portal derived from
// this browser's session, so an equal cookie and field that someone else chose (a short
// one, or 43 random characters as long as a real token), a token of another session of
// the same user and a token of a session that has ended are all refused.
func TestCSRFTokensCannotBePlanted(t *testing.T) {
	h := newHarness(t)
	h.res.put("team-a", "apps", map[string]any{"metadata": map[string]any{"name": "web"}, "spec": map[string]any{"image": "nginx", "replicas": int64(1)}})
	scale := Prefix + "/ns/team-a/apps/web/scale"
	refused := func(b *browser, tok, what string) {
		t.Helper()
		b.plant(tok)
		a := b.post(scale, url.Values{"replicas": {"3"}, "csrf": {tok}})
		wantStatus(t, a, http.StatusForbidden, what)
		wantIn(t, a.body, what, "security token")
	}

	dev := h.as("dev")
	refused(dev, "a", "a planted cookie and field, both \"a\"")
	refused(dev, random43(t), "a planted cookie and field of 43 random characters")

	// Another session of the same user has a token of its own.
	other := h.as("dev")
	other.get(Prefix + "/") // a page of the session sets its token
	refused(dev, other.csrf(), "the token of another session")

	// A token of a session that has ended does not serve the next one.
	dev.get(Prefix + "/") // the portal puts this session's own token back
	old := dev.csrf()
	wantStatus(t, dev.post(Prefix+"/logout", url.Values{"csrf": {old}}), http.StatusSeeOther, "log out")
	dev.login("dev", "developer password")
	refused(dev, old, "the token of a session that has ended")

	// The token the portal gives this session works (and the planting tried above
	// changed nothing).
	if len(h.res.patches) != 0 {
		t.Fatalf("a refused form changed something: %v", h.res.patches)
	}
	dev.get(Prefix + "/")
	wantStatus(t, dev.post(scale, url.Values{"replicas": {"3"}}), http.StatusSeeOther, "the session's own token")

	// Before a session exists the login and register forms refuse planted tokens too.
	for _, tok := range []string{"a", random43(t)} {
		b := h.browser()
		b.plant(tok)
		wantStatus(t, b.post(Prefix+"/login", url.Values{"username": {"dev"}, "password": {"developer password"}, "csrf": {tok}}),
			http.StatusForbidden, "a planted token on the login form")
		wantStatus(t, b.post(Prefix+"/register", url.Values{"username": {"mallory"}, "csrf": {tok}}),
			http.StatusForbidden, "a planted token on the register form")
	}
}
