package ui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mooringhq/mooring/internal/portal/portaltest"
)

// TestTeamsPage: an admin creates a team on the Teams page, naming a user with no role
// of its own and a namespace; the member logs in and sees the namespace on the home
// page and the team on the account page. The pages are also shot at a phone's width.
func TestTeamsPage(t *testing.T) {
	portal := startPortal(t)
	base := portal.URL
	root := browser(t)
	sh := newShots(t)
	ns := namespace(t, "ui-team")

	api := portaltest.New(t, base, validator(t))
	member, memberPw := api.Register("member")

	admin := sh.person(root, t, "admin")
	admin.login(base, "admin", adminPassword)
	team := fmt.Sprintf("payments-%d", time.Now().UnixNano()%1e6)
	card := fmt.Sprintf(`section.team[data-team=%q]`, team)
	admin.do("create a team", step,
		chromedp.Navigate(base+"/ui/teams"),
		chromedp.WaitVisible(css("#new-team-form")),
		chromedp.SendKeys(css("#nt-name"), team),
		chromedp.SendKeys(css("#nt-description"), "the payments developers"),
		chromedp.SetValue(css("#nt-role"), "developer"),
		chromedp.SendKeys(css("#nt-members"), member.Username),
		chromedp.SendKeys(css("#nt-namespaces"), ns),
		chromedp.Click(css("#new-team-form button[type=submit]")),
		chromedp.WaitVisible(css(".notice")),
		chromedp.WaitVisible(css(card)),
	)
	if got := admin.text(card + " p.bound"); !strings.Contains(got, member.Username) {
		t.Fatalf("the team's card: want %s bound, got %q", member.Username, got)
	}
	if got := admin.await("the team's namespaces field", step, fmt.Sprintf(`document.querySelector(%q)?.value ?? null`, card+" input[name=namespaces]")); got != ns {
		t.Fatalf("the team's namespaces field: want %q, got %q", ns, got)
	}
	admin.snap("team-created")
	admin.do("narrow to a phone", step, chromedp.EmulateViewport(390, 844))
	admin.snap("teams-phone")
	if w, err := chromedp.Run(admin.ctx, chromedp.Evaluate[int]("document.documentElement.scrollWidth")); err != nil || w > 390 {
		t.Fatalf("the Teams page at 390 px: want no horizontal scrolling, the page is %d px wide (%v)", w, err)
	}

	// The member, with no role of its own, sees the team's namespace and the team.
	m := sh.person(root, t, "member")
	m.login(base, member.Username, memberPw)
	link := fmt.Sprintf(`#namespaces a[href="/ui/ns/%s"]`, ns)
	m.do("see the team's namespace", step, chromedp.Navigate(base+"/ui/"), chromedp.WaitVisible(css(link)))
	m.snap("member-namespaces")
	m.do("see the team on the account page", step,
		chromedp.Navigate(base+"/ui/account"),
		chromedp.WaitVisible(css(fmt.Sprintf(`#teams li[data-team=%q]`, team))),
	)
	if got := m.text(fmt.Sprintf(`#teams li[data-team=%q]`, team)); !strings.Contains(got, "developer in "+ns) {
		t.Fatalf("the account page's team: want %q, got %q", "developer in "+ns, got)
	}
	m.snap("member-account")
	m.do("open the namespace", step, chromedp.Navigate(base+"/ui/ns/"+ns), chromedp.WaitVisible(css("#new-apps")))
	m.snap("member-namespace")
}
