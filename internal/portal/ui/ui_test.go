package ui

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	portalv1alpha1 "github.com/mooringhq/mooring/api/portal/v1alpha1"
	"github.com/mooringhq/mooring/internal/objecttree"
	"github.com/mooringhq/mooring/internal/portal/auth"
	"github.com/mooringhq/mooring/internal/portal/middleware"
	"github.com/mooringhq/mooring/internal/portal/ratelimit"
)

// harness is a UI over fakes, served over real HTTP.
type harness struct {
	t     *testing.T
	srv   *httptest.Server
	acc   *fakeAccounts
	res   *fakeResources
	obj   *fakeObjects
	limit *ratelimit.Limiter
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	return newHarnessWith(t, nil)
}

// newHarnessWith is newHarness with its Options changed by change.
func newHarnessWith(t *testing.T, change func(*Options)) *harness {
	t.Helper()
	gin.SetMode(gin.TestMode)
	h := &harness{t: t, acc: newFakeAccounts(), res: newFakeResources(), limit: ratelimit.New(1000, time.Minute, nil)}
	h.acc.add("admin", "admin password 1", portalv1alpha1.RoleAdmin)
	h.acc.add("auditor", "auditor password", portalv1alpha1.RoleAuditor)
	h.acc.add("dev", "developer password", portalv1alpha1.RoleDeveloper, "team-a")
	h.acc.add("nobody", "nobody password", portalv1alpha1.RoleNone)
	r := gin.New()
	h.obj = &fakeObjects{res: h.res, trees: map[string]*objecttree.Node{}, logs: map[string]string{}, noLogs: map[string]bool{}}
	o := Options{Accounts: h.acc, Resources: h.res, Permissions: fakePermissions{}, Objects: h.obj, IPLimit: h.limit, UserLimit: h.limit,
		CSRFKeys: testKeys(t), Now: fixedNow(time.Now())}
	if change != nil {
		change(&o)
	}
	r.Use(middleware.SecurityHeaders(o.SecureCookies)) // as routes.New does for the whole portal
	if err := Register(r, o); err != nil {
		t.Fatal(err)
	}
	h.srv = httptest.NewServer(r)
	t.Cleanup(h.srv.Close)
	return h
}

// browser is one cookie jar that does not follow redirects, so tests see them.
type browser struct {
	h *harness
	c *http.Client
}

func (h *harness) browser() *browser {
	jar, err := cookiejar.New(nil)
	if err != nil {
		h.t.Fatal(err)
	}
	return &browser{h: h, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

type answer struct {
	status   int
	header   http.Header
	body     string
	location string
}

func (b *browser) do(req *http.Request) answer {
	b.h.t.Helper()
	resp, err := b.c.Do(req)
	if err != nil {
		b.h.t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		b.h.t.Fatal(err)
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: string(data), location: resp.Header.Get("Location")}
}

func (b *browser) get(path string, header ...string) answer {
	b.h.t.Helper()
	req, err := http.NewRequest(http.MethodGet, b.h.srv.URL+path, nil)
	if err != nil {
		b.h.t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return b.do(req)
}

// post sends a form with the browser's CSRF token unless form sets csrf itself.
func (b *browser) post(path string, form url.Values, header ...string) answer {
	b.h.t.Helper()
	if _, ok := form["csrf"]; !ok {
		form.Set("csrf", b.csrf())
	}
	req, err := http.NewRequest(http.MethodPost, b.h.srv.URL+path, strings.NewReader(form.Encode()))
	if err != nil {
		b.h.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return b.do(req)
}

func (b *browser) cookie(name string) string {
	u, _ := url.Parse(b.h.srv.URL + Prefix + "/")
	for _, c := range b.c.Jar.Cookies(u) {
		if c.Name == name {
			return c.Value
		}
	}
	return ""
}

func (b *browser) csrf() string {
	if v := b.cookie(csrfCookie); v != "" {
		return v
	}
	b.get(Prefix + "/login")
	return b.cookie(csrfCookie)
}

// login logs in as a browser does: it opens the login page (which gives it a token for
// the form), posts the form and follows the redirect to a page of the new session
// (which gives it the session's token).
func (b *browser) login(user, pw string) {
	b.h.t.Helper()
	b.get(Prefix + "/login")
	a := b.post(Prefix+"/login", url.Values{"username": {user}, "password": {pw}})
	if a.status != http.StatusSeeOther {
		b.h.t.Fatalf("log in as %s: want 303, got %d: %s", user, a.status, a.body)
	}
	b.get(a.location)
}

func (h *harness) as(user string) *browser {
	pw := map[string]string{"admin": "admin password 1", "auditor": "auditor password", "dev": "developer password", "nobody": "nobody password"}[user]
	b := h.browser()
	b.login(user, pw)
	return b
}

func wantStatus(t *testing.T, a answer, want int, what string) {
	t.Helper()
	if a.status != want {
		t.Fatalf("%s: want %d, got %d (Location %q): %s", what, want, a.status, a.location, a.body)
	}
}

func wantIn(t *testing.T, body string, what string, subs ...string) {
	t.Helper()
	for _, s := range subs {
		if !strings.Contains(body, s) {
			t.Fatalf("%s: want %q in the page, got:\n%s", what, s, body)
		}
	}
}

func wantNotIn(t *testing.T, body string, what string, subs ...string) {
	t.Helper()
	for _, s := range subs {
		if strings.Contains(body, s) {
			t.Fatalf("%s: want no %q in the page, got:\n%s", what, s, body)
		}
	}
}

func TestLoginSessionAndLogout(t *testing.T) {
	h := newHarness(t)
	b := h.browser()

	a := b.get(Prefix + "/")
	wantStatus(t, a, http.StatusSeeOther, "a page without a session")
	if a.location != Prefix+"/login?next=%2Fui%2F" {
		t.Fatalf("want a redirect to the login page keeping the page, got %q", a.location)
	}
	a = b.get(Prefix + "/login")
	wantStatus(t, a, http.StatusOK, "login page")
	wantIn(t, a.body, "login page", `<label for="f-username">Username</label>`, `<label for="f-password">Password</label>`,
		`name="csrf" value="`+b.cookie(csrfCookie)+`"`)

	a = b.post(Prefix+"/login", url.Values{"username": {"dev"}, "password": {"wrong password!"}})
	wantStatus(t, a, http.StatusUnauthorized, "a wrong password")
	wantIn(t, a.body, "a wrong password", "invalid username or password", `value="dev"`)
	wantNotIn(t, a.body, "a wrong password", "wrong password!")

	a = b.post(Prefix+"/login", url.Values{"username": {"dev"}, "password": {"developer password"}, "next": {"/ui/ns/team-a"}})
	wantStatus(t, a, http.StatusSeeOther, "a right password")
	if a.location != "/ui/ns/team-a" {
		t.Fatalf("want to land on next, got %q", a.location)
	}
	for _, c := range strings.Join(a.header.Values("Set-Cookie"), "\n") {
		_ = c
	}
	cookies := a.header.Values("Set-Cookie")
	if len(cookies) < 2 {
		t.Fatalf("want session cookies, got %v", cookies)
	}
	for _, c := range cookies {
		if !strings.Contains(c, "HttpOnly") || !strings.Contains(c, "SameSite=Strict") || !strings.Contains(c, "Path=/ui") || strings.Contains(c, "Secure") {
			t.Fatalf("want HttpOnly, SameSite=Strict, Path=/ui cookies, not Secure over plain HTTP: %q", c)
		}
	}
	wantStatus(t, b.get(Prefix+"/"), http.StatusOK, "home with a session")

	stolen := h.browser() // a copy of the session's cookies
	for _, c := range []string{accessCookie, refreshCookie} {
		u, _ := url.Parse(h.srv.URL + Prefix + "/")
		stolen.c.Jar.SetCookies(u, []*http.Cookie{{Name: c, Value: b.cookie(c), Path: Prefix}})
	}
	wantStatus(t, stolen.get(Prefix+"/"), http.StatusOK, "home with a copy of the session's cookies")

	a = b.post(Prefix+"/logout", url.Values{})
	wantStatus(t, a, http.StatusSeeOther, "log out")
	wantStatus(t, b.get(Prefix+"/"), http.StatusSeeOther, "home after logging out")
	if h.acc.logouts != 1 {
		t.Fatalf("logging out must end the session on the server: %d logouts", h.acc.logouts)
	}
	wantStatus(t, stolen.get(Prefix+"/"), http.StatusSeeOther, "home with a copy of the cookies after logging out")

	// Open redirects are refused.
	b.login("dev", "developer password")
	b.get(Prefix + "/login")
	a = b.post(Prefix+"/login", url.Values{"username": {"dev"}, "password": {"developer password"}, "next": {"//evil.example/ui/"}})
	if a.location != Prefix+"/" {
		t.Fatalf("want a foreign next ignored, got %q", a.location)
	}
}

func TestCookiesAreSecureOverTLS(t *testing.T) {
	h := newHarness(t)
	u := &UI{o: Options{}}
	w := httptest.NewRecorder()
	c, _ := gin.CreateTestContext(w)
	c.Request = httptest.NewRequest(http.MethodGet, "/ui/login", nil)
	c.Request.TLS = &tls.ConnectionState{}
	u.setCookie(c, accessCookie, "x", 60)
	if got := w.Header().Get("Set-Cookie"); !strings.Contains(got, "Secure") || !strings.Contains(got, "HttpOnly") {
		t.Fatalf("want a Secure HttpOnly cookie over TLS, got %q", got)
	}
	_ = h
}

// TestSecureCookiesOverPlainHTTP: behind a TLS-terminating proxy the portal sees plain
// HTTP, so SecureCookies marks the cookies Secure and asks for HTTPS (HSTS) anyway;
// without it, plain HTTP gets neither.
func TestSecureCookiesOverPlainHTTP(t *testing.T) {
	for _, secure := range []bool{true, false} {
		h := newHarnessWith(t, func(o *Options) { o.SecureCookies = secure })
		page := h.browser().get(Prefix + "/login")
		if got := page.header.Get("Strict-Transport-Security"); (got != "") != secure {
			t.Errorf("SecureCookies %v: Strict-Transport-Security %q", secure, got)
		}
		// A client that keeps to plain HTTP never sends Secure cookies back, so the
		// CSRF cookie the login page set goes by hand.
		name := map[bool]string{true: csrfHostCookie, false: csrfCookie}[secure]
		var tok string
		for _, c := range page.header.Values("Set-Cookie") {
			if v, ok := strings.CutPrefix(c, name+"="); ok {
				tok, _, _ = strings.Cut(v, ";")
				if secure && !strings.Contains(c, "Path=/;") {
					t.Errorf("the %s cookie must have the path / (the prefix demands it): %q", name, c)
				}
			}
		}
		login := h.browser().post(Prefix+"/login", url.Values{"username": {"dev"}, "password": {"developer password"}, "csrf": {tok}},
			"Cookie", name+"="+tok)
		wantStatus(t, login, http.StatusSeeOther, "log in")
		cookies := append(page.header.Values("Set-Cookie"), login.header.Values("Set-Cookie")...)
		names := map[string]bool{}
		for _, c := range cookies {
			name, _, _ := strings.Cut(c, "=")
			names[name] = true
			if got := strings.Contains(c, "; Secure"); got != secure {
				t.Errorf("SecureCookies %v: cookie %q is Secure: %v", secure, c, got)
			}
		}
		for _, name := range []string{map[bool]string{true: csrfHostCookie, false: csrfCookie}[secure], accessCookie, refreshCookie} {
			if !names[name] {
				t.Errorf("SecureCookies %v: no %s cookie set", secure, name)
			}
		}
	}
}

func TestExpiredAccessTokenIsRefreshed(t *testing.T) {
	h := newHarness(t)
	b := h.as("dev")
	old := b.cookie(accessCookie)
	h.acc.mu.Lock()
	h.acc.expired = true
	h.acc.mu.Unlock()
	// The fake refuses every access token while expired is set, so the page works only if
	// the session falls back to the refresh token; the fresh pair is set as cookies.
	a := b.get(Prefix + "/")
	wantStatus(t, a, http.StatusSeeOther, "every access token refused")
	h.acc.mu.Lock()
	h.acc.expired = false
	h.acc.users["dev"].gen++ // revoke: old access and refresh tokens no longer fit
	h.acc.mu.Unlock()
	b2 := h.as("dev")
	if b2.cookie(accessCookie) == old {
		t.Fatal("want a new token after revocation")
	}
	// A browser holding only a valid refresh token gets a new access token.
	jarURL, _ := url.Parse(h.srv.URL + Prefix + "/")
	b3 := h.browser()
	b3.c.Jar.SetCookies(jarURL, []*http.Cookie{{Name: refreshCookie, Value: b2.cookie(refreshCookie), Path: Prefix}})
	a = b3.get(Prefix + "/")
	wantStatus(t, a, http.StatusOK, "a page with only a refresh token")
	if b3.cookie(accessCookie) == "" {
		t.Fatal("want the refreshed access token set as a cookie")
	}
}

func TestCSRFIsRequiredOnEveryForm(t *testing.T) {
	h := newHarness(t)
	dev := h.as("dev")
	h.res.put("team-a", "apps", map[string]any{"metadata": map[string]any{"name": "web"}, "spec": map[string]any{"image": "nginx", "replicas": int64(1)}})

	forms := []string{"/logout", "/account/email", "/account/password", "/account/logout-all", "/users/id-dev",
		"/ns/team-a/apps", "/ns/team-a/apps/web/edit", "/ns/team-a/apps/web/scale", "/ns/team-a/apps/web/pause",
		"/ns/team-a/apps/web/resume", "/ns/team-a/apps/web/delete", "/ns/team-a/backups/web/run"}
	for _, f := range forms {
		for name, csrf := range map[string]string{"missing": "", "wrong": strings.Repeat("x", 43)} {
			form := url.Values{"replicas": {"3"}, "email": {"a@b.c"}, "image": {"nginx"}, "name": {"x"}, "role": {"admin"}}
			if csrf != "" {
				form.Set("csrf", csrf)
			} else {
				form["csrf"] = nil
			}
			a := dev.post(Prefix+f, form)
			wantStatus(t, a, http.StatusForbidden, name+" CSRF token on "+f)
			wantIn(t, a.body, f, "security token")
		}
	}
	// A right token from a foreign origin is refused too.
	a := dev.post(Prefix+"/ns/team-a/apps/web/scale", url.Values{"replicas": {"3"}}, "Origin", "https://evil.example")
	wantStatus(t, a, http.StatusForbidden, "a post from another origin")
	for name, csrf := range map[string]string{"missing": "", "wrong": strings.Repeat("y", 43)} {
		b := h.browser()
		b.get(Prefix + "/login")
		form := url.Values{"username": {"dev"}, "password": {"developer password"}, "csrf": {csrf}}
		wantStatus(t, b.post(Prefix+"/login", form), http.StatusForbidden, name+" CSRF token on the login form")
		wantStatus(t, b.post(Prefix+"/register", url.Values{"username": {"x"}, "csrf": {csrf}}), http.StatusForbidden, name+" CSRF token on the register form")
	}
	if len(h.res.patches) != 0 || len(h.res.deleted) != 0 || len(h.res.runs) != 0 || len(h.acc.updates) != 0 {
		t.Fatalf("a refused form changed something: patches %v, deleted %v, runs %v, updates %v", h.res.patches, h.res.deleted, h.res.runs, h.acc.updates)
	}
}

func TestSecurityHeaders(t *testing.T) {
	h := newHarness(t)
	b := h.browser()
	a := b.get(Prefix + "/login")
	csp := a.header.Get("Content-Security-Policy")
	for _, want := range []string{"script-src 'self'", "default-src 'none'", "frame-ancestors 'none'", "form-action 'self'"} {
		if !strings.Contains(csp, want) {
			t.Fatalf("want %q in the CSP, got %q", want, csp)
		}
	}
	if strings.Contains(csp, "unsafe-inline") {
		t.Fatalf("the CSP allows inline code: %q", csp)
	}
	wantNotIn(t, a.body, "login page", "<script>", "style=", "onclick", "onsubmit")
	if a.header.Get("X-Content-Type-Options") != "nosniff" || a.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("want nosniff and no-store, got %v", a.header)
	}
	js := b.get(Prefix + "/static/ui.js")
	wantStatus(t, js, http.StatusOK, "the script")
	wantIn(t, js.body, "the script", "X-Mooring-Live")
	wantStatus(t, b.get(Prefix+"/static/ui.css"), http.StatusOK, "the style sheet")
	root := b.get("/")
	if root.status != http.StatusSeeOther || root.location != Prefix+"/" {
		t.Fatalf("want / to redirect to the UI, got %d %q", root.status, root.location)
	}
}

func TestRegister(t *testing.T) {
	h := newHarness(t)
	b := h.browser()
	wantIn(t, b.get(Prefix+"/register").body, "register page", `<label for="f-email">Email</label>`)
	a := b.post(Prefix+"/register", url.Values{"username": {"newbie"}, "email": {"n@example.com"}, "password": {"short"}})
	wantStatus(t, a, http.StatusUnprocessableEntity, "a short password")
	wantIn(t, a.body, "a short password", `id="err-password">must be 12 to 128 characters long`, `value="newbie"`, `value="n@example.com"`)
	a = b.post(Prefix+"/register", url.Values{"username": {"newbie"}, "email": {"n@example.com"}, "password": {"long enough password"}})
	wantStatus(t, a, http.StatusSeeOther, "registering")
	wantIn(t, b.get(a.location).body, "login after registering", "Your account is ready")
	b.login("newbie", "long enough password")
	wantIn(t, b.get(Prefix+"/").body, "home of a new user", `id="no-role"`, "You have no role yet")
}

func TestHome(t *testing.T) {
	h := newHarness(t)
	a := h.as("dev").get(Prefix + "/")
	wantIn(t, a.body, "a developer's home", `<a href="/ui/ns/team-a">team-a</a>`)
	wantNotIn(t, a.body, "a developer's home", "Manage users", `href="/ui/users"`)
	wantIn(t, h.as("admin").get(Prefix+"/").body, "an admin's home", "Manage users")
	wantIn(t, h.as("nobody").get(Prefix+"/").body, "home without a role", "You have no role yet")
}

// hostile is text an attacker could put in a condition message, an event or an object
// name (where the API server allows it).
const hostile = `<script>alert(1)</script><img src=x onerror=alert(2)>"'&`

func seedNamespace(h *harness) {
	now := time.Now()
	h.res.put("team-a", "apps", map[string]any{
		"metadata": map[string]any{"name": "web", "creationTimestamp": now.Add(-90 * time.Minute).UTC().Format(time.RFC3339), "resourceVersion": "7"},
		"spec":     map[string]any{"image": "nginx:1.27", "replicas": int64(2), "port": int64(80), "env": []any{map[string]any{"name": "MODE", "value": "prod"}}},
		"status": map[string]any{"phase": "NotReady", "desiredReplicas": int64(2), "availableReplicas": int64(1), "conditions": []any{
			map[string]any{"type": "Ready", "status": "False", "reason": "Rollout", "message": "1 of 2 " + hostile},
			map[string]any{"type": "Progressing", "status": "True", "reason": "Fine", "message": "TRUE-CONDITION-HIDDEN"},
		}},
	})
	h.res.put("team-a", "apps", map[string]any{"metadata": map[string]any{"name": hostile}, "spec": map[string]any{"image": "x"}})
	h.res.put("team-a", "databaseclusters", map[string]any{
		"metadata": map[string]any{"name": "orders"},
		"spec":     map[string]any{"engine": "postgresql", "version": "18", "replicaCount": int64(1)},
		"status":   map[string]any{"phase": "Running", "readyReplicas": int64(1), "primaryEndpoint": "orders.team-a.svc:5432"},
	})
	h.res.put("team-a", "backups", map[string]any{
		"metadata": map[string]any{"name": "nightly"},
		"spec":     map[string]any{"databaseRef": map[string]any{"name": "orders"}, "schedule": "0 3 * * *"},
		"status":   map[string]any{"phase": "Scheduled", "lastSuccessfulTime": now.Add(-time.Hour).UTC().Format(time.RFC3339)},
	})
	h.res.events = []corev1.Event{
		{InvolvedObject: corev1.ObjectReference{Kind: "App", Name: "web"}, Type: "Warning", Reason: "Failed", Message: "pull " + hostile, LastTimestamp: metav1.NewTime(now.Add(-time.Minute))},
		{InvolvedObject: corev1.ObjectReference{Kind: "App", Name: "web"}, Type: "Normal", Reason: "Created", Message: "Created Deployment web", LastTimestamp: metav1.NewTime(now.Add(-2 * time.Minute))},
	}
}

func TestNamespacePageShowsStatusAndEscapesHostileText(t *testing.T) {
	h := newHarness(t)
	seedNamespace(h)
	a := h.as("dev").get(Prefix + "/ns/team-a")
	wantStatus(t, a, http.StatusOK, "namespace page")
	wantIn(t, a.body, "namespace page",
		`<tr class="object" data-name="web" data-phase="NotReady" data-health="unhealthy">`, `<td data-label="Image">nginx:1.27</td>`, `<td data-label="Replicas">2</td>`, `<td data-label="Age">90m</td>`,
		"<strong>Ready</strong> is False (Rollout): 1 of 2 &lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(2)&gt;&#34;&#39;&amp;",
		"Endpoint:</span> orders.team-a.svc:5432", "Credentials Secret:</span> orders-credentials",
		"Last success:</span>", "Next scheduled run:</span>", `data-poll="3000"`, `data-live="/ui/ns/team-a"`,
		`id="new-apps"`, "Scale", "Pause web", "Delete web", "Run backup nightly now", `href="/ui/ns/team-a/apps/web/edit"`)
	wantNotIn(t, a.body, "namespace page", hostile, "<script>alert", "<img src=x", "password")
	// One line per object with its health, linking to its page; events are on that page.
	wantIn(t, a.body, "rows link to object pages", `<a href="/ui/ns/team-a/apps/web">web</a>`,
		`<td class="health unhealthy" data-label="Health">unhealthy</td>`, `<a href="/ui/ns/team-a/databaseclusters/orders">orders</a>`)
	wantNotIn(t, a.body, "namespace page without events", "Created Deployment web")
	// A rollout under way is no alarm: shown, but not as unhealthy.
	wantIn(t, a.body, "a rollout under way", `<li class="condition pending"><strong>Progressing</strong> is True (Fine): TRUE-CONDITION`)
	// The hostile name is escaped in text and in URLs.
	wantIn(t, a.body, "hostile name", "&lt;script&gt;alert(1)&lt;/script&gt;", "/ui/ns/team-a/apps/%3cscript%3ealert%281%29%3c/script%3e")
}

func TestLiveRefreshPollsWithETag(t *testing.T) {
	h := newHarness(t)
	seedNamespace(h)
	b := h.as("dev")
	a := b.get(Prefix+"/ns/team-a", liveHeader, "1")
	wantStatus(t, a, http.StatusOK, "a poll")
	wantNotIn(t, a.body, "a poll", "<html", "<header")
	wantIn(t, a.body, "a poll", `data-phase="NotReady"`)
	etag := a.header.Get("ETag")
	if etag == "" {
		t.Fatal("want an ETag on a poll")
	}
	wantStatus(t, b.get(Prefix+"/ns/team-a", liveHeader, "1", "If-None-Match", etag), http.StatusNotModified, "an unchanged namespace")
	h.res.mu.Lock()
	_ = unstructuredSet(h.res.objs["team-a/apps/web"].Object, "Running", "status", "phase")
	h.res.mu.Unlock()
	a = b.get(Prefix+"/ns/team-a", liveHeader, "1", "If-None-Match", etag)
	wantStatus(t, a, http.StatusOK, "a changed namespace")
	wantIn(t, a.body, "a changed namespace", `data-phase="Running"`)
	// A poll after the session ended says so instead of redirecting to a login page.
	wantStatus(t, h.browser().get(Prefix+"/ns/team-a", liveHeader, "1"), http.StatusUnauthorized, "a poll without a session")
}

func TestAuditorSeesNoControls(t *testing.T) {
	h := newHarness(t)
	seedNamespace(h)
	a := h.as("auditor").get(Prefix + "/ns/team-a")
	wantStatus(t, a, http.StatusOK, "an auditor's namespace page")
	wantIn(t, a.body, "an auditor's namespace page", `data-name="web"`, "1 of 2")
	wantNotIn(t, a.body, "an auditor's namespace page", "New App", "/scale", "/pause", "/delete", "/edit", "/run", `method="post" action="/ui/ns`)
	u := h.as("auditor").get(Prefix + "/users")
	wantStatus(t, u, http.StatusOK, "an auditor's users page")
	wantIn(t, u.body, "an auditor's users page", "(read-only)", `data-user="dev"`)
	wantNotIn(t, u.body, "an auditor's users page", `action="/ui/users/`)
}

func TestAppForms(t *testing.T) {
	h := newHarness(t)
	dev := h.as("dev")
	a := dev.get(Prefix + "/ns/team-a/apps/new")
	wantStatus(t, a, http.StatusOK, "new App form")
	for _, f := range []string{"name", "image", "replicas", "port", "config", "env"} {
		wantIn(t, a.body, "new App form", `<label for="f-`+f+`">`, `id="f-`+f+`"`)
	}

	form := url.Values{"name": {"web"}, "image": {"not a valid image!"}, "replicas": {"2"}, "port": {"8080"}, "config": {"a: 1\n"}, "env": {"A=1\nB=two=2"}}
	a = dev.post(Prefix+"/ns/team-a/apps", form)
	wantStatus(t, a, http.StatusUnprocessableEntity, "an invalid image")
	wantIn(t, a.body, "an invalid image", `<p class="field-error" id="err-image">Invalid value: &#34;not a valid image!&#34;: is not a valid image reference</p>`,
		`value="not a valid image!"`, `value="8080"`, "B=two=2")

	form.Set("image", "nginx:1.27")
	form.Set("replicas", "two")
	a = dev.post(Prefix+"/ns/team-a/apps", form)
	wantStatus(t, a, http.StatusUnprocessableEntity, "replicas that are not a number")
	wantIn(t, a.body, "replicas that are not a number", `id="err-replicas">must be a whole number`)

	form.Set("replicas", "2")
	form.Set("env", "NOEQUALS")
	a = dev.post(Prefix+"/ns/team-a/apps", form)
	wantIn(t, a.body, "a bad env line", `id="err-env">line 1: write NAME=value`)

	form.Set("env", "A=1\nB=two=2")
	a = dev.post(Prefix+"/ns/team-a/apps", form)
	wantStatus(t, a, http.StatusSeeOther, "a valid App")
	if a.location != "/ui/ns/team-a?notice=created" {
		t.Fatalf("want back to the namespace, got %q", a.location)
	}
	obj := h.res.objs["team-a/apps/web"].Object
	spec := obj["spec"].(map[string]any)
	if spec["image"] != "nginx:1.27" || spec["replicas"] != int64(2) || spec["port"] != int64(8080) || spec["config"] != "a: 1\n" {
		t.Fatalf("want the form's spec, got %v", spec)
	}
	if env := spec["env"].([]any); len(env) != 2 || env[1].(map[string]any)["value"] != "two=2" {
		t.Fatalf("want env A=1, B=two=2, got %v", env)
	}

	// Edit: prefilled, and an emptied port is removed.
	a = dev.get(Prefix + "/ns/team-a/apps/web/edit")
	wantStatus(t, a, http.StatusOK, "edit form")
	wantIn(t, a.body, "edit form", `value="nginx:1.27"`, `value="8080"`, "A=1\nB=two=2", "Edit App web")
	wantNotIn(t, a.body, "edit form", `id="f-name"`)
	a = dev.post(Prefix+"/ns/team-a/apps/web/edit", url.Values{"image": {"nginx:1.28"}, "replicas": {"3"}, "port": {""}, "config": {""}, "env": {"A=1"}})
	wantStatus(t, a, http.StatusSeeOther, "saving the edit")
	spec = h.res.objs["team-a/apps/web"].Object["spec"].(map[string]any)
	if spec["image"] != "nginx:1.28" || spec["replicas"] != int64(3) || spec["port"] != nil || len(spec["env"].([]any)) != 1 {
		t.Fatalf("want the edited spec, got %v", spec)
	}
	a = dev.post(Prefix+"/ns/team-a/apps/web/edit", url.Values{"image": {"bad image!"}})
	wantStatus(t, a, http.StatusUnprocessableEntity, "an invalid edit")
	wantIn(t, a.body, "an invalid edit", `id="err-image"`)
	wantStatus(t, dev.get(Prefix+"/ns/team-a/apps/missing/edit"), http.StatusNotFound, "editing a missing App")
	wantStatus(t, dev.get(Prefix+"/ns/team-a/backups/x/edit"), http.StatusNotFound, "editing a Backup")
	wantStatus(t, dev.get(Prefix+"/ns/team-a/pods/new"), http.StatusNotFound, "an unknown kind")
}

func TestActions(t *testing.T) {
	h := newHarness(t)
	seedNamespace(h)
	dev := h.as("dev")
	steps := []struct {
		path   string
		form   url.Values
		notice string
	}{
		{"/ns/team-a/apps/web/scale", url.Values{"replicas": {"5"}}, "scaled"},
		{"/ns/team-a/apps/web/pause", url.Values{}, "paused"},
		{"/ns/team-a/apps/web/resume", url.Values{}, "resumed"},
		{"/ns/team-a/databaseclusters/orders/scale", url.Values{"replicas": {"2"}}, "scaled"},
		{"/ns/team-a/backups/nightly/run", url.Values{}, "backup"},
		{"/ns/team-a/apps/web/delete", url.Values{}, "deleted"},
	}
	for _, s := range steps {
		a := dev.post(Prefix+s.path, s.form)
		wantStatus(t, a, http.StatusSeeOther, s.path)
		if a.location != "/ui/ns/team-a?notice="+s.notice {
			t.Fatalf("%s: want back to the namespace with notice %s, got %q", s.path, s.notice, a.location)
		}
	}
	want := []string{
		`team-a/apps/web {"spec":{"replicas":5}}`,
		`team-a/apps/web {"metadata":{"annotations":{"mooring.dev/paused":"true"}}}`,
		`team-a/apps/web {"metadata":{"annotations":{"mooring.dev/paused":null}}}`,
		`team-a/databaseclusters/orders {"spec":{"replicaCount":2}}`,
	}
	if strings.Join(h.res.patches, "\n") != strings.Join(want, "\n") {
		t.Fatalf("want patches\n%s\ngot\n%s", strings.Join(want, "\n"), strings.Join(h.res.patches, "\n"))
	}
	if len(h.res.runs) != 1 || h.res.runs[0] != "team-a/nightly" || len(h.res.deleted) != 1 || h.res.deleted[0] != "team-a/apps/web" {
		t.Fatalf("want one backup run and one delete, got %v %v", h.res.runs, h.res.deleted)
	}
	wantStatus(t, dev.post(Prefix+"/ns/team-a/apps/web/scale", url.Values{"replicas": {"many"}}), http.StatusUnprocessableEntity, "scaling to a word")
	wantStatus(t, dev.post(Prefix+"/ns/team-a/backups/nightly/scale", url.Values{"replicas": {"2"}}), http.StatusNotFound, "scaling a Backup")
	wantStatus(t, dev.post(Prefix+"/ns/team-a/apps/web/run", url.Values{}), http.StatusNotFound, "running an App")

	a := dev.get(Prefix + "/ns/team-a/apps/web/delete")
	wantStatus(t, a, http.StatusOK, "delete confirmation")
	wantIn(t, a.body, "delete confirmation", `Delete the App <strong id="delete-name">web</strong> in namespace <strong>team-a</strong>?`, "Delete App web</button>")
}

func TestCreateCacheDatabaseAndBackup(t *testing.T) {
	h := newHarness(t)
	dev := h.as("dev")
	for kind, form := range map[string]url.Values{
		"cacheinstances":   {"name": {"sessions"}, "replicas": {"2"}, "memoryMB": {"128"}, "version": {""}},
		"databaseclusters": {"name": {"orders"}, "engine": {"postgresql"}, "version": {"18"}, "replicaCount": {"1"}, "storage": {"2Gi"}},
		"backups":          {"name": {"nightly"}, "database": {"orders"}, "schedule": {"@daily"}},
	} {
		wantStatus(t, dev.get(Prefix+"/ns/team-a/"+kind+"/new"), http.StatusOK, "new "+kind+" form")
		wantStatus(t, dev.post(Prefix+"/ns/team-a/"+kind, form), http.StatusSeeOther, "create "+kind)
	}
	db := h.res.objs["team-a/databaseclusters/orders"].Object
	if fieldString(db, "spec.storage.size") != "2Gi" || fieldString(db, "spec.engine") != "postgresql" || fieldString(db, "spec.replicaCount") != "1" {
		t.Fatalf("want the form's database, got %v", db)
	}
	if c := h.res.objs["team-a/cacheinstances/sessions"].Object; fieldString(c, "spec.memoryMB") != "128" || fieldString(c, "spec.version") != "" {
		t.Fatalf("want the form's cache without an empty version, got %v", c)
	}
	if b := h.res.objs["team-a/backups/nightly"].Object; fieldString(b, "spec.databaseRef.name") != "orders" {
		t.Fatalf("want the form's backup, got %v", b)
	}
}

func TestUsersPage(t *testing.T) {
	h := newHarness(t)
	adm := h.as("admin")
	a := adm.get(Prefix + "/users")
	wantStatus(t, a, http.StatusOK, "users page")
	wantIn(t, a.body, "users page", `action="/ui/users/id-nobody"`, `<label for="role-id-nobody">Role of nobody</label>`, `<label for="ns-id-nobody">Namespaces of nobody</label>`)
	a = adm.post(Prefix+"/users/id-nobody", url.Values{"role": {"developer"}, "namespaces": {"team-a, team-b"}})
	wantStatus(t, a, http.StatusSeeOther, "granting a role")
	if got := h.acc.users["nobody"].u.Spec; got.Role != "developer" || strings.Join(got.Namespaces, ",") != "team-a,team-b" {
		t.Fatalf("want developer in team-a and team-b, got %+v", got)
	}
	a = adm.post(Prefix+"/users/id-nobody", url.Values{"role": {"developer"}, "namespaces": {"missing"}})
	wantStatus(t, a, http.StatusUnprocessableEntity, "a namespace that does not exist")
	wantIn(t, a.body, "a namespace that does not exist", `namespaces[0]: namespace &#34;missing&#34; does not exist`)
	a = h.as("dev").get(Prefix + "/users")
	wantStatus(t, a, http.StatusForbidden, "a developer on the users page")
	wantIn(t, a.body, "a developer on the users page", "dev may not list users")
	a = h.as("auditor").post(Prefix+"/users/id-dev", url.Values{"role": {"admin"}, "namespaces": {""}})
	wantStatus(t, a, http.StatusForbidden, "an auditor granting a role")
}

func TestAccount(t *testing.T) {
	h := newHarness(t)
	dev := h.as("dev")
	a := dev.get(Prefix + "/account")
	wantIn(t, a.body, "account page", `value="dev@example.com"`, `<label for="f-current">Current password</label>`)
	a = dev.post(Prefix+"/account/email", url.Values{"email": {"not-an-email"}})
	wantStatus(t, a, http.StatusUnprocessableEntity, "a bad email")
	wantIn(t, a.body, "a bad email", `id="err-email">must be a plain e-mail address`)
	wantStatus(t, dev.post(Prefix+"/account/email", url.Values{"email": {"new@example.com"}}), http.StatusSeeOther, "a new email")
	wantIn(t, dev.get(Prefix+"/account").body, "account page", `value="new@example.com"`)

	a = dev.post(Prefix+"/account/password", url.Values{"currentPassword": {"wrong"}, "password": {"a new long password"}})
	wantStatus(t, a, http.StatusForbidden, "a wrong current password")
	wantIn(t, a.body, "a wrong current password", `id="err-currentPassword">is wrong`)
	a = dev.post(Prefix+"/account/password", url.Values{"currentPassword": {"developer password"}, "password": {"a new long password"}})
	wantStatus(t, a, http.StatusSeeOther, "a password change")
	wantStatus(t, dev.get(Prefix+"/"), http.StatusSeeOther, "the session after a password change")
	dev.login("dev", "a new long password")

	other := h.browser()
	other.login("dev", "a new long password")
	wantStatus(t, dev.post(Prefix+"/account/logout-all", url.Values{}), http.StatusSeeOther, "log out everywhere")
	wantStatus(t, other.get(Prefix+"/"), http.StatusSeeOther, "another session after logging out everywhere")
}

func TestRateLimitIsShared(t *testing.T) {
	h := newHarness(t)
	h.limit = ratelimit.New(2, time.Minute, nil)
	r := gin.New()
	if err := Register(r, Options{Accounts: h.acc, Resources: h.res, Permissions: fakePermissions{}, Objects: h.obj, IPLimit: h.limit, UserLimit: h.limit,
		CSRFKeys: testKeys(t), Now: fixedNow(time.Now())}); err != nil {
		t.Fatal(err)
	}
	h.srv = httptest.NewServer(r)
	defer h.srv.Close()
	b := h.browser()
	b.get(Prefix + "/login")
	var last answer
	for range 3 {
		last = b.post(Prefix+"/login", url.Values{"username": {"dev"}, "password": {"wrong"}})
	}
	wantStatus(t, last, http.StatusTooManyRequests, "a third login within the limit of 2")
	if last.header.Get("Retry-After") == "" {
		t.Fatal("want Retry-After on 429")
	}
}

// testKeys are signing keys in a Secret of a fake client: the CSRF tokens' keys.
func testKeys(t *testing.T) *auth.Keyring {
	t.Helper()
	keys := auth.NewKeyring(fake.NewClientBuilder().Build(), auth.KeyringOptions{Namespace: "p", Name: "keys",
		RotateAfter: time.Hour, Retain: 2 * time.Hour})
	if err := keys.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	return keys
}

// fixedNow stops the clock, so that ages (and with them the live part's ETag) do not
// change between two requests of a test.
func fixedNow(t time.Time) func() time.Time { return func() time.Time { return t } }
