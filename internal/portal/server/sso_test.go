package server_test

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	portalv1alpha1 "github.com/mooringhq/mooring/api/portal/v1alpha1"
	"github.com/mooringhq/mooring/internal/devenv"
	"github.com/mooringhq/mooring/internal/portal/models"
	"github.com/mooringhq/mooring/internal/portal/portaltest"
	"github.com/mooringhq/mooring/internal/portal/server"
	"github.com/mooringhq/mooring/internal/portal/sso"
	"github.com/mooringhq/mooring/internal/portal/store"
	"github.com/mooringhq/mooring/internal/testutil"
	"github.com/mooringhq/mooring/internal/testutil/hydra"
)

// newSSOPortal is a portal that signs people in through h, with its client registered
// there for the portal's own callback URL.
func newSSOPortal(t *testing.T, h *hydra.Hydra, change func(*server.Config)) *portal {
	t.Helper()
	env.Require(t)
	hs := httptest.NewUnstartedServer(nil)
	base := "http://" + hs.Listener.Addr().String()
	id, secret := h.Client(t, base+sso.CallbackPath)
	cfg := baseConfig()
	cfg.SSO = sso.Config{IssuerURL: h.Issuer, ClientID: id, ClientSecret: secret, RedirectURL: base + sso.CallbackPath,
		GroupsClaim: "groups", UsernameClaim: "preferred_username", ProviderName: "Test IdP"}
	if change != nil {
		change(&cfg)
	}
	return serve(t, cfg, hs)
}

// ssoBrowser is a browser of one person: it keeps cookies and follows no redirect by
// itself.
type ssoBrowser struct {
	t    *testing.T
	p    *portal
	http *http.Client
}

func newSSOBrowser(t *testing.T, p *portal) *ssoBrowser {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &ssoBrowser{t: t, p: p, http: &http.Client{Jar: jar, Timeout: time.Minute,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (b *ssoBrowser) get(u string) (*http.Response, string) {
	b.t.Helper()
	resp, err := b.http.Get(u)
	if err != nil {
		b.t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	return resp, string(body)
}

func (b *ssoBrowser) cookie(name string) string {
	u, _ := url.Parse(b.p.URL + "/ui/sso/callback")
	for _, c := range b.http.Jar.Cookies(u) {
		if c.Name == name {
			return c.Value
		}
	}
	return ""
}

// toProvider clicks "Sign in with" and signs in as username at h: it returns the
// callback URL the provider sends the browser back to, not yet opened.
func (b *ssoBrowser) toProvider(h *hydra.Hydra, username string) string {
	b.t.Helper()
	resp, _ := b.get(b.p.URL + "/ui/sso/login?next=" + url.QueryEscape("/ui/account"))
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), h.Issuer+"/") {
		b.t.Fatalf("sign-in start: want 303 to %s, got %d to %q", h.Issuer, resp.StatusCode, resp.Header.Get("Location"))
	}
	if b.cookie("mooring_sso") == "" {
		b.t.Fatal("the sign-in start set no flow cookie")
	}
	back := h.Authorize(b.t, b.http, resp.Header.Get("Location"), username)
	if !strings.HasPrefix(back, b.p.URL+sso.CallbackPath+"?") {
		b.t.Fatalf("the provider sent the browser to %s, want the portal's callback", back)
	}
	return back
}

// signIn signs in as username through h and returns the session's access token.
func (b *ssoBrowser) signIn(h *hydra.Hydra, username string) string {
	b.t.Helper()
	resp, body := b.get(b.toProvider(h, username))
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `content="0;url=/ui/account"`) {
		b.t.Fatalf("callback: want 200 moving on to /ui/account, got %d: %s", resp.StatusCode, body)
	}
	access := b.cookie("mooring_access")
	if access == "" || b.cookie("mooring_sso") != "" {
		b.t.Fatalf("after the callback: access cookie %t, flow cookie left %t", access != "", b.cookie("mooring_sso") != "")
	}
	return access
}

// me is the account an access token belongs to.
func (p *portal) me(t *testing.T, token string) models.User {
	t.Helper()
	r := p.Do("GET", "/api/v1/users/me", token, nil)
	portaltest.Expect(t, r, http.StatusOK, "GET /users/me")
	var u models.User
	r.Decode(t, &u)
	return u
}

func getUser(t *testing.T, name string) *portalv1alpha1.User {
	t.Helper()
	u := &portalv1alpha1.User{}
	if err := admin.Get(context.Background(), client.ObjectKey{Name: name}, u); err != nil {
		t.Fatalf("get User %s: %v", name, err)
	}
	return u
}

// TestSSOSignIn: the first sign-in through a real provider creates an account of that
// issuer and subject with no role and no password, stores its groups, and gives the
// browser a session like a password login's (its tokens work, refresh, and logging out
// ends them); the next sign-in finds the same account and updates its groups.
func TestSSOSignIn(t *testing.T) {
	h := hydra.Start(t, testutil.Integration)
	p := newSSOPortal(t, h, nil)
	name := portaltest.UniqueName("sso")
	subject := "subject-of-" + name
	h.SetUser(name, hydra.User{Subject: subject, Email: name + "@example.com", Groups: []string{"team-b", "team-a"}})

	b := newSSOBrowser(t, p)
	access := b.signIn(h, name)
	me := p.me(t, access)
	if me.Username != name || me.Role != string(portalv1alpha1.RoleNone) || me.Email != name+"@example.com" {
		t.Fatalf("signed in as %+v, want %s with role none", me, name)
	}
	u := getUser(t, name)
	if u.Spec.SSO == nil || *u.Spec.SSO != (portalv1alpha1.SSOIdentity{Issuer: h.Issuer, Subject: subject}) {
		t.Errorf("spec.sso = %+v, want issuer %s subject %s", u.Spec.SSO, h.Issuer, subject)
	}
	if !slices.Equal(u.Status.Groups, []string{"team-a", "team-b"}) {
		t.Errorf("status.groups = %v, want [team-a team-b]", u.Status.Groups)
	}
	err := admin.Get(context.Background(), client.ObjectKey{Namespace: devenv.PortalNamespace, Name: store.SecretName(u.Spec.ID)}, &corev1.Secret{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("a single sign-on account has a password Secret (get: %v)", err)
	}
	// No role yet: the cluster refuses what the account has not been granted.
	portaltest.Expect(t, p.Do("GET", "/api/v1/users", access, nil), http.StatusForbidden, "list users with role none")

	// The session is an ordinary one: refresh, then log out ends it.
	pair := p.Refresh(b.cookie("mooring_refresh")).Tokens(t, "refresh the single sign-on session")
	portaltest.Expect(t, p.Do("POST", "/api/v1/logout", pair.AccessToken, nil), http.StatusNoContent, "log out")
	portaltest.Expect(t, p.Do("GET", "/api/v1/users/me", pair.AccessToken, nil), http.StatusUnauthorized, "the access token after logging out")

	// A second sign-in, in another browser, with other groups: the same account.
	h.SetUser(name, hydra.User{Subject: subject, Email: name + "@example.com", Groups: []string{"team-c"}})
	access = newSSOBrowser(t, p).signIn(h, name)
	again := p.me(t, access)
	if again.ID != me.ID {
		t.Fatalf("the second sign-in got account %s, want %s", again.ID, me.ID)
	}
	if g := getUser(t, name).Status.Groups; !slices.Equal(g, []string{"team-c"}) {
		t.Errorf("status.groups after the second sign-in = %v, want [team-c]", g)
	}

	// An admin grants a role as to anyone.
	p.Grant(p.adminToken(), me.ID, "auditor")
	portaltest.Expect(t, p.Do("GET", "/api/v1/users", access, nil), http.StatusOK, "list users as an auditor")

	// A password login to the account is refused like a wrong password.
	portaltest.Expect(t, p.Do("POST", "/api/v1/login", "", map[string]string{"username": name, "password": "any password at all"}),
		http.StatusUnauthorized, "password login to a single sign-on account")
}

// TestSSOCallbackRefusals: a callback without this browser's flow cookie, with another
// sign-in's state, or with a code already used gives no session.
func TestSSOCallbackRefusals(t *testing.T) {
	h := hydra.Start(t, testutil.Integration)
	p := newSSOPortal(t, h, nil)
	name := portaltest.UniqueName("ssobad")

	refused := func(t *testing.T, b *ssoBrowser, callback, says string) {
		t.Helper()
		resp, body := b.get(callback)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, says) {
			t.Fatalf("callback: want 400 saying %q, got %d: %s", says, resp.StatusCode, body)
		}
		if b.cookie("mooring_access") != "" || b.cookie("mooring_refresh") != "" {
			t.Fatal("a refused callback set session cookies")
		}
	}
	t.Run("missing flow cookie", func(t *testing.T) {
		callback := newSSOBrowser(t, p).toProvider(h, name)
		refused(t, newSSOBrowser(t, p), callback, "started in another browser")
	})
	t.Run("another sign-in's state", func(t *testing.T) {
		b := newSSOBrowser(t, p)
		first := b.toProvider(h, name)
		second := b.toProvider(h, name) // replaces the flow cookie
		u, _ := url.Parse(first)
		q := u.Query()
		s, _ := url.Parse(second)
		q.Set("state", s.Query().Get("state")+"x")
		u.RawQuery = q.Encode()
		refused(t, b, u.String(), "did not match")
	})
	t.Run("replayed code", func(t *testing.T) {
		b := newSSOBrowser(t, p)
		callback := b.toProvider(h, name)
		flow := b.cookie("mooring_sso")
		if resp, body := b.get(callback); resp.StatusCode != http.StatusOK {
			t.Fatalf("first callback: %d: %s", resp.StatusCode, body)
		}
		// An attacker holding the callback URL and a copy of the flow cookie.
		thief := newSSOBrowser(t, p)
		u, _ := url.Parse(p.URL + "/ui/sso/")
		thief.http.Jar.SetCookies(u, []*http.Cookie{{Name: "mooring_sso", Value: flow, Path: "/ui/sso"}})
		refused(t, thief, callback, "the code was used")
		// Neither the code nor the tokens reach the portal's log.
		u, _ = url.Parse(callback)
		for what, secret := range map[string]string{"code": u.Query().Get("code"), "access token": b.cookie("mooring_access"), "flow cookie": flow} {
			if secret == "" || strings.Contains(logs.String(), secret) {
				t.Errorf("the %s is empty or in the portal's log", what)
			}
		}
	})
}

// TestSSOOnly: with local logins off, password logins and registration are refused
// with a clear error and the login page shows only the single sign-on button; members
// of the admin group are admins from their first sign-in.
func TestSSOOnly(t *testing.T) {
	h := hydra.Start(t, testutil.Integration)
	p := newSSOPortal(t, h, func(c *server.Config) {
		c.DisableLocalLogin = true
		c.SSOAdminGroup = "portal-admins"
	})
	r := p.Do("POST", "/api/v1/login", "", map[string]string{"username": "admin", "password": adminPassword})
	portaltest.Expect(t, r, http.StatusForbidden, "password login with local logins off")
	if msg := r.Error(t).Message; !strings.Contains(msg, "single sign-on") {
		t.Errorf("refusal %q does not say to use single sign-on", msg)
	}
	portaltest.Expect(t, p.Do("POST", "/api/v1/users", "", map[string]string{"username": portaltest.UniqueName("reg"), "email": "r@example.com", "password": "a good long password"}),
		http.StatusForbidden, "registration with local logins off")

	var info models.SSOInfo
	r = p.Do("GET", "/api/v1/sso", "", nil)
	portaltest.Expect(t, r, http.StatusOK, "GET /api/v1/sso")
	r.Decode(t, &info)
	if want := (models.SSOInfo{Enabled: true, Provider: "Test IdP", Issuer: h.Issuer, LoginURL: "/ui/sso/login"}); info != want {
		t.Errorf("GET /api/v1/sso = %+v, want %+v", info, want)
	}

	b := newSSOBrowser(t, p)
	resp, body := b.get(p.URL + "/ui/login")
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "Sign in with Test IdP") || strings.Contains(body, `type="password"`) || strings.Contains(body, "/ui/register") {
		t.Errorf("login page with local logins off: want the SSO button and no password form or register link, got %d: %s", resp.StatusCode, body)
	}

	boss := portaltest.UniqueName("boss")
	h.SetUser(boss, hydra.User{Subject: "sub-" + boss, Email: boss + "@example.com", Groups: []string{"portal-admins"}})
	if me := p.me(t, b.signIn(h, boss)); me.Role != string(portalv1alpha1.RoleAdmin) {
		t.Errorf("a member of the admin group signed in with role %q, want admin", me.Role)
	}
}

// TestSSOInfoWithoutProvider: a portal without single sign-on says so, and that
// password logins are on; its UI serves no sign-in paths.
func TestSSOInfoWithoutProvider(t *testing.T) {
	p := newPortal(t, nil)
	var info models.SSOInfo
	r := p.Do("GET", "/api/v1/sso", "", nil)
	portaltest.Expect(t, r, http.StatusOK, "GET /api/v1/sso")
	r.Decode(t, &info)
	if info != (models.SSOInfo{LocalLogin: true}) {
		t.Errorf("GET /api/v1/sso = %+v, want only localLogin", info)
	}
	resp, err := http.Get(p.URL + "/ui/sso/login")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /ui/sso/login without a provider: %d, want 404", resp.StatusCode)
	}
}
