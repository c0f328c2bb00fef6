package ui

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mooringhq/mooring/internal/localcluster"
	"github.com/mooringhq/mooring/internal/portal/models"
	"github.com/mooringhq/mooring/internal/portal/portaltest"
	"github.com/mooringhq/mooring/internal/portal/sso"
	"github.com/mooringhq/mooring/internal/testutil"
	"github.com/mooringhq/mooring/internal/testutil/hydra"
)

// TestSingleSignOn: a person clicks "Sign in with Test IdP" on the portal's login page,
// types their username on the provider's login page (a real ORY Hydra), and lands in
// the portal logged in as that single sign-on account, with no role yet.
func TestSingleSignOn(t *testing.T) {
	h := hydra.Start(t, testutil.E2E)
	port, err := localcluster.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	callback := "http://127.0.0.1:" + strconv.Itoa(port) + sso.CallbackPath
	id, secret := h.Client(t, callback)
	secretFile := filepath.Join(t.TempDir(), "oidc-client-secret")
	if err := os.WriteFile(secretFile, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	portal := startPortalOn(t, port, "--oidc-issuer-url="+h.Issuer, "--oidc-client-id="+id,
		"--oidc-client-secret-file="+secretFile, "--oidc-redirect-url="+callback, "--oidc-provider-name=Test IdP")
	base := portal.URL
	sh := newShots(t)
	person := sh.person(browser(t), t, "sso")
	name := "sso-" + strconv.FormatInt(int64(port), 10)
	h.SetUser(name, hydra.User{Subject: "sub-" + name, Email: name + "@example.com", Groups: []string{"developers"}})

	person.do("open the login page", step,
		chromedp.Navigate(base+"/ui/login"),
		chromedp.WaitVisible(css("#sso-login")),
	)
	if got := person.text("#sso-login"); got != "Sign in with Test IdP" {
		t.Errorf("the button says %q, want %q", got, "Sign in with Test IdP")
	}
	person.snap("login-page")
	person.do("sign in at the provider", step,
		chromedp.Click(css("#sso-login")),
		chromedp.WaitVisible(css("#username")),
	)
	person.snap("provider-login")
	person.do("type the username", step,
		chromedp.SendKeys(css("#username"), name),
		chromedp.Click(css("#sign-in")),
		chromedp.WaitVisible(css("#logout")),
		chromedp.WaitVisible(css("#no-role")),
	)
	if who := person.text("header .who"); who != name+" (none)" {
		t.Errorf("the header says %q, want %q", who, name+" (none)")
	}
	if u := person.await("the page's address", step, "location.pathname"); u != "/ui/" {
		t.Errorf("landed on %s, want /ui/", u)
	}
	person.snap("signed-in")

	// A team that names a group of the provider's: a person whose groups claim carries it
	// lands with the team's namespace, and the API server lets them use it.
	ns := namespace(t, "ui-sso-team")
	api := portaltest.New(t, base, validator(t))
	group := "payments-" + strconv.Itoa(port)
	portaltest.Expect(t, api.Do("POST", "/api/v1/teams", api.Login("admin", adminPassword).AccessToken, models.CreateTeamRequest{
		Name: "payments-" + strconv.Itoa(port), Groups: []string{group}, Role: "developer", Namespaces: []string{ns}}), http.StatusCreated, "an admin creates a team for the group")
	member := sh.person(browser(t), t, "sso-member")
	memberName := "member-" + strconv.Itoa(port)
	h.SetUser(memberName, hydra.User{Subject: "sub-" + memberName, Email: memberName + "@example.com", Groups: []string{"everyone", group}})
	member.do("sign in as a member of the group", step,
		chromedp.Navigate(base+"/ui/login"),
		chromedp.Click(css("#sso-login")),
		chromedp.WaitVisible(css("#username")),
		chromedp.SendKeys(css("#username"), memberName),
		chromedp.Click(css("#sign-in")),
		chromedp.WaitVisible(css(fmt.Sprintf(`#namespaces a[href="/ui/ns/%s"]`, ns))),
	)
	// The binding follows the groups written at sign-in within moments: poll the
	// namespace page until its lists (which the member reads as themself) are there.
	err = testutil.Poll(30*time.Second, func() error {
		member.do("open the team's namespace", step, chromedp.Navigate(base+"/ui/ns/"+ns))
		if member.count("#new-apps") == 1 {
			return nil
		}
		return fmt.Errorf("the namespace page of %s shows no App list: %q", ns, member.text("main"))
	})
	if err != nil {
		member.snap("failed-team-namespace")
		t.Fatalf("a member of the team's group uses its namespace: %v", err)
	}
	member.snap("team-namespace")
}
