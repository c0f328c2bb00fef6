package ui

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mooringhq/mooring/internal/portal/openapi/validate"
	"github.com/mooringhq/mooring/internal/portal/portaltest"
)

// rollout is how long a real rollout on kwok nodes may take on a busy 2-core machine.
const rollout = 2 * time.Minute

// step is how long one page interaction may take.
const step = 30 * time.Second

// docsScreenshot is the screenshot the README shows; MOORING_UPDATE_DOCS=1 refreshes it.
const docsScreenshot = "docs/ui-namespace.png"

func namespace(t *testing.T, prefix string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	if err := suite.Client.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

func css(s string) chromedp.CSS { return chromedp.CSS(s) }

// login fills the login form.
func (p *person) login(base, user, pw string) {
	p.do("log in", step,
		chromedp.Navigate(base+"/ui/login"),
		chromedp.SendKeys(css("#f-username"), user),
		chromedp.SendKeys(css("#f-password"), pw),
		chromedp.Click(css("#login-form button[type=submit]")),
		chromedp.WaitVisible(css("#logout")),
	)
}

// TestWebUI walks the story in a browser: a new user registers and sees that
// they have no role; an admin grants them a namespace on the users page and their next
// page shows it; they create an App through the form, see the API server's validation
// error next to the field, watch the App reach Running without reloading and scale it;
// an auditor sees the App with no create, scale or delete controls.
func TestWebUI(t *testing.T) {
	portal := startPortal(t)
	base := portal.URL
	root := browser(t)
	sh := newShots(t)
	nsA := namespace(t, "ui-a")

	// A developer registers and logs in: no role yet.
	dev := sh.person(root, t, "developer")
	devName := fmt.Sprintf("dev-%d", time.Now().UnixNano()%1e6)
	devPw := "developer password for the ui"
	dev.do("register", step,
		chromedp.Navigate(base+"/ui/register"),
		chromedp.SendKeys(css("#f-username"), devName),
		chromedp.SendKeys(css("#f-email"), devName+"@example.com"),
		chromedp.SendKeys(css("#f-password"), devPw),
		chromedp.Click(css("#register-form button[type=submit]")),
		chromedp.WaitVisible(css(".notice")),
	)
	dev.login(base, devName, devPw)
	dev.do("see the no-role page", step, chromedp.WaitVisible(css("#no-role")))
	dev.snap("no-role")

	// The admin grants developer on nsA on the users page.
	admin := sh.person(root, t, "admin")
	admin.login(base, "admin", adminPassword)
	row := fmt.Sprintf(`tr[data-user=%q]`, devName)
	admin.do("grant a role", step,
		chromedp.Navigate(base+"/ui/users"),
		chromedp.WaitVisible(css(row)),
		chromedp.SetValue(css(row+" select[name=role]"), "developer"),
		chromedp.SendKeys(css(row+" input[name=namespaces]"), nsA),
		chromedp.Click(css(row+" form.grant button")),
		chromedp.WaitVisible(css(".notice")),
	)
	if got := admin.text(row + " td.ns"); got != nsA {
		t.Fatalf("users page: want %s's namespaces to be %s, got %q", devName, nsA, got)
	}
	admin.snap("granted")

	// The developer's next page shows the namespace.
	dev.do("see the namespace", step,
		chromedp.Navigate(base+"/ui/"),
		chromedp.WaitVisible(css(fmt.Sprintf(`#namespaces a[href="/ui/ns/%s"]`, nsA))),
	)
	dev.snap("namespaces")

	// Create an App through the form; first with an image the webhook refuses.
	dev.do("open the App form", step,
		chromedp.Click(css(fmt.Sprintf(`#namespaces a[href="/ui/ns/%s"]`, nsA))),
		chromedp.WaitVisible(css("#new-apps")),
		chromedp.Click(css("#new-apps")),
		chromedp.WaitVisible(css("#object-form")),
		chromedp.SendKeys(css("#f-name"), "web"),
		chromedp.SendKeys(css("#f-image"), "Not A Valid Image!"),
		chromedp.SendKeys(css("#f-port"), "8080"),
		chromedp.SendKeys(css("#f-env"), "MODE=demo"),
		chromedp.Click(css("#object-form button[type=submit]")),
		chromedp.WaitVisible(css("#err-image")),
	)
	if msg := dev.text("#err-image"); !strings.Contains(msg, "Not A Valid Image!") {
		t.Fatalf("want the API server's error about spec.image next to the image field, got %q", msg)
	}
	if n := dev.count(".field.invalid #f-image"); n != 1 {
		t.Fatalf("want the image field marked invalid, got %d", n)
	}
	dev.snap("validation-error")

	dev.do("fix the image and create", step,
		chromedp.SetValue(css("#f-image"), "nginx:1.27"),
		chromedp.Click(css("#object-form button[type=submit]")),
		chromedp.WaitVisible(css(`tr.object[data-name="web"]`)),
	)
	// Mark the page: a reload would lose the mark, so finding it after the App turned
	// Running proves the status came by polling.
	dev.do("mark the page", step, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Evaluate[chromedp.Void]("window.mooringMark = 42")(ctx, tg)
		return err
	}))
	dev.do("watch the App reach Running", rollout, chromedp.WaitVisible(css(`tr.object[data-name="web"][data-phase="Running"]`)))
	if mark, err := chromedp.Run(dev.ctx, chromedp.Evaluate[int]("window.mooringMark || 0")); err != nil || mark != 42 {
		t.Fatalf("the page reloaded while waiting for Running (mark %d, %v)", mark, err)
	}
	dev.snap("running")

	// Scale to 2 and watch both replicas become available, again without reloading.
	dev.do("scale", step,
		chromedp.SetValue(css("#scale-apps-web"), "2"),
		chromedp.Click(css(`form.scale[action$="/apps/web/scale"] button`)),
	)
	// The page before held a notice too ("Created."): wait for the scale's own.
	dev.await("the scale's notice", step, `document.querySelector(".notice")?.textContent.includes("Scaling") ? "yes" : null`)
	cell := func(label string) string { return fmt.Sprintf(`tr.object[data-name="web"] td[data-label=%q]`, label) }
	// The Replicas column is the App's status.desiredReplicas: the operator reports the
	// new count, and the page shows it without a reload.
	desired := chromedp.Poll[bool](fmt.Sprintf(`document.querySelector(%q)?.textContent === "2"`, cell("Replicas")), chromedp.WithPollingTimeout(rollout))
	dev.do("watch the desired replicas become 2", rollout, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := desired(ctx, tg)
		return err
	}))
	available := chromedp.Poll[bool](fmt.Sprintf(`document.querySelector(%q)?.textContent === "2"`, cell("Available")), chromedp.WithPollingTimeout(rollout))
	dev.do("watch 2 replicas become available", rollout, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := available(ctx, tg)
		return err
	}))
	shot := dev.snap("scaled")
	if os.Getenv("MOORING_UPDATE_DOCS") == "1" {
		copyFile(t, shot, filepath.Join(suite.Root, docsScreenshot))
	}

	// An auditor reads the same namespace and has no control that would fail.
	api := portaltest.New(t, base, validator(t))
	aud, audPw := api.Register("aud")
	api.Grant(api.Login("admin", adminPassword).AccessToken, aud.ID, "auditor")
	auditor := sh.person(root, t, "auditor")
	auditor.login(base, aud.Username, audPw)
	auditor.do("read the namespace", step,
		chromedp.Navigate(base+"/ui/ns/"+nsA),
		chromedp.WaitVisible(css(`tr.object[data-name="web"]`)),
	)
	for _, sel := range []string{"#new-apps", "a[href$='/new']", "form[action*='/scale']", "a[href$='/delete']", "form[action$='/delete']",
		"form[action$='/pause']", "a[href$='/edit']"} {
		if n := auditor.count(sel); n != 0 {
			t.Fatalf("an auditor sees %d control(s) %s that would fail", n, sel)
		}
	}
	auditor.snap("read-only")
	if n := dev.count("a[href$='/delete']"); n == 0 {
		t.Fatal("the developer sees no delete control, so the auditor check proves nothing")
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = src.Close() }()
	dst, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("updated %s", to)
}

// validator checks every API exchange of the test against the OpenAPI document.
func validator(t *testing.T) *validate.Validator {
	t.Helper()
	v, err := validate.New()
	if err != nil {
		t.Fatal(err)
	}
	return v
}
