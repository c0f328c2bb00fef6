package ui

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mooringhq/mooring/internal/portal/cluster"
	"github.com/mooringhq/mooring/internal/portal/portaltest"
)

// docsObjectScreenshot is an object page on a phone; MOORING_UPDATE_DOCS=1 refreshes it.
const docsObjectScreenshot = "docs/ui-object-phone.png"

// TestObjectPage opens an App's page from its namespace page, as a developer: its
// conditions read healthy once it runs, its events, the children Mooring made and
// their pods are there, and the log part of the first pod shows its lines or why the
// node cannot serve them (kwok nodes serve no logs), never "not allowed". Then the same
// on a 390-pixel-wide phone screen, and as a user whose RBAC allows reading the App and
// its pods but not pods/log: the page says "not allowed" instead of the log.
func TestObjectPage(t *testing.T) {
	portal := startPortal(t)
	base := portal.URL
	root := browser(t)
	sh := newShots(t)
	ns := namespace(t, "ui-obj")

	api := portaltest.New(t, base, validator(t))
	adminToken := api.Login("admin", adminPassword).AccessToken
	devUser, devPw := api.Register("objdev")
	api.Grant(adminToken, devUser.ID, "developer", ns)
	devToken := api.Login(devUser.Username, devPw).AccessToken
	portaltest.Expect(t, api.Do("POST", "/api/v1/namespaces/"+ns+"/apps", devToken, portaltest.App("web")), http.StatusCreated, "create App web")

	dev := sh.person(root, t, "developer")
	dev.login(base, devUser.Username, devPw)
	dev.do("watch the App reach Running", rollout,
		chromedp.Navigate(base+"/ui/ns/"+ns),
		chromedp.WaitVisible(css(`tr.object[data-name="web"][data-phase="Running"][data-health="healthy"]`)),
	)
	dev.do("open the App's page", step,
		chromedp.Click(css(`tr.object[data-name="web"] th a`)),
		chromedp.WaitVisible(css(`#object[data-kind="App"][data-name="web"]`)),
	)
	if h := dev.text("#object .health"); h != "healthy" {
		t.Errorf("a running App's page: want it healthy, got %q", h)
	}
	if n, bad := dev.count("#conditions li.condition.healthy"), dev.count("#conditions li.condition.unhealthy"); n == 0 || bad != 0 {
		t.Errorf("conditions: want healthy ones and no unhealthy, got %d healthy, %d unhealthy", n, bad)
	}
	if n := dev.count("#events ul.events li"); n == 0 {
		t.Errorf("events: want the operator's events about web, got none: %q", dev.text("#events"))
	}
	if n := dev.count(`#children li[data-depth="1"]`); n == 0 || !strings.Contains(dev.text("#children"), "Deployment") {
		t.Errorf("children: want the Deployment Mooring made, got %q", dev.text("#children"))
	}
	if n := dev.count("#pods tr.pod"); n != 1 {
		t.Errorf("pods: want web's 1 pod, got %d", n)
	}
	if ready := dev.text(`#pods tr.pod td[data-label="Ready"]`); ready != "1/1" {
		t.Errorf("the pod: want 1/1 ready, got %q", ready)
	}
	if got := dev.text(`#pods tr.pod td[data-label="Restarts"]`); got != "0" {
		t.Errorf("the pod: want 0 restarts, got %q", got)
	}
	logPart := dev.text("#log")
	// On a simulated (kwok) node there is no kubelet: the part says so in words.
	if dev.count("#log-not-allowed") != 0 || (dev.count("#log pre.log") == 0 &&
		(dev.count("#log-no-node-logs") != 1 || !strings.Contains(logPart, "This pod's node serves no logs"))) {
		t.Errorf("the log part of a developer: want lines or \"This pod's node serves no logs\", got %q", logPart)
	}
	t.Logf("the log part on kwok: %q", logPart)
	dev.snap("object-page")

	dev.do("look on a phone", step,
		chromedp.EmulateViewport(390, 844),
		chromedp.Reload(),
		chromedp.WaitVisible(css(`#object[data-name="web"]`)),
	)
	wide := dev.await("the page width", step, `String(document.documentElement.scrollWidth)`)
	if wide != "390" {
		t.Errorf("on a 390-px screen the object page is %s px wide: it scrolls sideways", wide)
	}
	shot := dev.snap("object-page-phone")
	if os.Getenv("MOORING_UPDATE_DOCS") == "1" {
		copyFile(t, shot, filepath.Join(suite.Root, docsObjectScreenshot))
	}
	dev.do("the namespace on a phone", step,
		chromedp.Navigate(base+"/ui/ns/"+ns),
		chromedp.WaitVisible(css(`tr.object[data-name="web"]`)),
	)
	if w := dev.await("the page width", step, `String(document.documentElement.scrollWidth)`); w != "390" {
		t.Errorf("on a 390-px screen the namespace page is %s px wide: it scrolls sideways", w)
	}
	dev.snap("namespace-phone")

	// A user RBAC lets read the App and its pods, but not their logs.
	nolog, nologPw := api.Register("nolog")
	bindWithoutLogs(t, ns, cluster.NewImpersonator(suite.Config, cluster.DefaultUsersNamespace).IdentityOf(nolog.ID, "none").UserName)
	reader := sh.person(root, t, "nolog")
	reader.login(base, nolog.Username, nologPw)
	reader.do("open the App's page", step,
		chromedp.Navigate(fmt.Sprintf("%s/ui/ns/%s/apps/web", base, ns)),
		chromedp.WaitVisible(css("#log")),
	)
	if reader.count("#pods tr.pod") != 1 || reader.count("#log-not-allowed") != 1 || reader.count("#log pre.log") != 0 {
		t.Errorf("without pods/log: want the pod listed and \"not allowed\" for its log, got pods %q, log %q", reader.text("#pods"), reader.text("#log"))
	}
	reader.snap("log-not-allowed")
}

// bindWithoutLogs lets user read Mooring's objects, pods, events and what Mooring makes in
// ns, but not pods/log.
func bindWithoutLogs(t *testing.T, ns, user string) {
	t.Helper()
	ctx := context.Background()
	read := []string{"get", "list", "watch"}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "read-no-logs", Namespace: ns}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"mooring.dev"}, Resources: []string{"apps", "cacheinstances", "databaseclusters", "backups"}, Verbs: read},
		{APIGroups: []string{""}, Resources: []string{"pods", "events", "services", "configmaps"}, Verbs: read},
		{APIGroups: []string{"apps"}, Resources: []string{"deployments", "replicasets", "statefulsets"}, Verbs: read},
	}}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "read-no-logs", Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}}
	if err := suite.Client.Create(ctx, role); err != nil {
		t.Fatal(err)
	}
	if err := suite.Client.Create(ctx, rb); err != nil {
		t.Fatal(err)
	}
}
