package ui

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	portalv1alpha1 "github.com/mooringhq/mooring/api/portal/v1alpha1"
	"github.com/mooringhq/mooring/internal/portal/models"
	"github.com/mooringhq/mooring/internal/portal/sso"
)

// fakeSSO records where a sign-in was to land and finishes every sign-in as nobody,
// landing where Finish is told to.
type fakeSSO struct {
	began   string
	landing string
}

func (f *fakeSSO) Name() string { return "Corp <IdP>" }

func (f *fakeSSO) Begin(_ context.Context, next string) (string, string, error) {
	f.began = next
	return "https://idp.example.com/auth?state=s", "sealed-flow", nil
}

func (f *fakeSSO) Finish(_ context.Context, cookie string, q url.Values) (sso.Identity, string, error) {
	if cookie != "sealed-flow" {
		return sso.Identity{}, "", &sso.Error{Message: "The sign-in expired or started in another browser; sign in again.", Err: errBadLogin}
	}
	if e := q.Get("error"); e != "" {
		return sso.Identity{}, "", &sso.Error{Message: "The provider said " + e, Err: errBadLogin}
	}
	return sso.Identity{Subject: "nobody"}, f.landing, nil
}

// fakeSSOAccounts logs every identity in as its subject, a user of fakeAccounts.
type fakeSSOAccounts struct{ acc *fakeAccounts }

func (f fakeSSOAccounts) LoginSSO(_ context.Context, id sso.Identity) (models.TokenResponse, error) {
	f.acc.mu.Lock()
	defer f.acc.mu.Unlock()
	f.acc.sessions++
	return f.acc.pair(id.Subject, f.acc.sessions), nil
}

func ssoHarness(t *testing.T, local bool) (*harness, *fakeSSO) {
	f := &fakeSSO{}
	h := newHarnessWith(t, func(o *Options) {
		o.SSO, o.SSOAccounts, o.DisableLocalLogin = f, fakeSSOAccounts{acc: o.Accounts.(*fakeAccounts)}, !local
	})
	return h, f
}

// The login page shows the provider's button (its name escaped), and the password form
// and registration only while local logins are on.
func TestLoginPageWithSSO(t *testing.T) {
	for _, local := range []bool{true, false} {
		h, _ := ssoHarness(t, local)
		a := h.browser().get("/ui/login?next=/ui/ns/x")
		if a.status != http.StatusOK || !strings.Contains(a.body, `href="/ui/sso/login?next=%2fui%2fns%2fx">Sign in with Corp &lt;IdP&gt;</a>`) {
			t.Errorf("local=%t: the login page has no escaped SSO link keeping next: %s", local, a.body)
		}
		if got := strings.Contains(a.body, `type="password"`) && strings.Contains(a.body, "/ui/register"); got != local {
			t.Errorf("local=%t: password form and register link shown: %t", local, got)
		}
		if r := h.browser().get("/ui/register"); (r.status == http.StatusOK) != local {
			t.Errorf("local=%t: GET /ui/register answered %d", local, r.status)
		}
	}
}

// A sign-in lands only on a page of the UI, whatever next says, before and after the
// provider; the flow cookie is HttpOnly, SameSite=Lax, for the SSO paths only, and the
// callback spends it.
func TestSSOLandsOnlyOnLocalPages(t *testing.T) {
	h, f := ssoHarness(t, true)
	b := h.browser()
	for next, want := range map[string]string{"/ui/ns/team": "/ui/ns/team", "https://evil.example/": "/ui/", "//evil.example/ui/": "/ui/", "/ui/\\\\evil": "/ui/"} {
		a := b.get("/ui/sso/login?next=" + url.QueryEscape(next))
		if a.status != http.StatusSeeOther || a.location != "https://idp.example.com/auth?state=s" || f.began != want {
			t.Errorf("next %q: got %d to %q landing %q, want 303 to the provider landing %q", next, a.status, a.location, f.began, want)
		}
	}
	set := b.get("/ui/sso/login").header.Get("Set-Cookie")
	for _, attr := range []string{"mooring_sso=sealed-flow", "Path=/ui/sso", "HttpOnly", "SameSite=Lax"} {
		if !strings.Contains(set, attr) {
			t.Errorf("flow cookie %q lacks %s", set, attr)
		}
	}
	for landing, want := range map[string]string{"/ui/account": "/ui/account", "https://evil.example/": "/ui/"} {
		f.landing = landing
		a := b.get("/ui/sso/callback?code=c&state=s")
		if a.status != http.StatusOK || !strings.Contains(a.body, `content="0;url=`+want+`"`) {
			t.Errorf("landing %q: got %d: %s; want a page moving on to %s", landing, a.status, a.body, want)
		}
		if !strings.HasPrefix(b.cookie("mooring_access"), "access-nobody-0-") {
			t.Errorf("landing %q: no session cookie after the callback", landing)
		}
		b.c.Jar.SetCookies(mustURL(t, h.srv.URL+"/ui/sso/"), []*http.Cookie{{Name: "mooring_sso", Value: "sealed-flow", Path: "/ui/sso"}})
	}
	// The provider's error, in plain text on the login page.
	a := b.get("/ui/sso/callback?error=<script>")
	if a.status != http.StatusBadRequest || !strings.Contains(a.body, "The provider said &lt;script&gt;") {
		t.Errorf("provider error: got %d: %s", a.status, a.body)
	}
	if strings.Contains(b.get("/ui/sso/callback?code=c").header.Get("Set-Cookie"), "mooring_access=access") {
		t.Error("a callback without the flow cookie (spent by the last one) set a session")
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// The account page of a single sign-on account offers no password change.
func TestAccountPageOfSSOAccount(t *testing.T) {
	h, _ := ssoHarness(t, true)
	h.acc.users["nobody"].u.Spec.SSO = &portalv1alpha1.SSOIdentity{Issuer: "https://idp", Subject: "1"}
	a := h.as("nobody").get("/ui/account")
	if a.status != http.StatusOK || strings.Contains(a.body, `id="password-form"`) || !strings.Contains(a.body, "signs in through single sign-on") {
		t.Errorf("account page of a single sign-on account: %d, want no password form: %s", a.status, a.body)
	}
	if b := h.as("dev").get("/ui/account"); !strings.Contains(b.body, `id="password-form"`) {
		t.Errorf("a local account's page lost its password form: %s", b.body)
	}
}
