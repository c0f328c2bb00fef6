package ui

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/mooringhq/mooring/internal/localcluster"
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
}
