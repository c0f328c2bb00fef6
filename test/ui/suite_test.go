package ui

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mooringhq/mooring/internal/localcluster"
	"github.com/mooringhq/mooring/internal/testutil"
	"github.com/mooringhq/mooring/internal/testutil/clusterenv"
	"github.com/mooringhq/mooring/internal/testutil/portalenv"
)

// chromium is Debian's package's browser; .ci/run installs it when missing.
const chromium = "/usr/bin/chromium"

// suite is the cluster and operator of the package.
var suite *clusterenv.Env

func TestMain(m *testing.M) {
	clusterenv.Main(m, &suite, clusterenv.Options{Name: "ui", Shared: true})
}

const adminPassword = "ui-test-admin-password"

// startPortal installs and starts one portal. All browsers come from 127.0.0.1, so the
// per-IP limit is raised.
func startPortal(t *testing.T, args ...string) *localcluster.Portal {
	t.Helper()
	return startPortalOn(t, 0, args...)
}

// startPortalOn is startPortal on port (a free one when 0), with extra flags.
func startPortalOn(t *testing.T, port int, args ...string) *localcluster.Portal {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// A namespace of the package's own (test/portal may run a portal on the same
	// cluster, with a first admin of its own); the first admin is "admin".
	env, err := portalenv.Install(ctx, suite, portalenv.Options{Namespace: "mooring-portal-ui", AdminPassword: adminPassword})
	if err != nil {
		t.Fatalf("install the portal: %v", err)
	}
	// Browsers reach this portal over plain HTTP, where Secure cookies do not belong.
	p, err := env.StartOn(ctx, port, "portal.log", append([]string{"--ip-rate-limit=1000", "--secure-cookies=false"}, args...)...)
	if err != nil {
		t.Fatalf("start the portal: %v", err)
	}
	t.Cleanup(func() {
		if err := p.Stop(); err != nil {
			t.Errorf("stop portal: %v", err)
		}
	})
	return p
}

// browser starts headless Chromium with a fresh profile, closed network features and
// no sandbox (tests may run as root in a container).
func browser(t *testing.T) context.Context {
	t.Helper()
	if _, err := os.Stat(chromium); err != nil {
		t.Fatalf("%s not found: install Debian's chromium package (.ci/run does)", chromium)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-default-browser-check", true),
		chromedp.UserDataDir(filepath.Join(t.TempDir(), "chromium-profile")), chromedp.WindowSize(1280, 1000),
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	// The first Run starts the browser; its context must have no deadline.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	t.Cleanup(func() { cancel(); cancelAlloc() })
	return ctx
}

// person is one browser profile (its own cookies) of a shared browser.
type person struct {
	t    *testing.T
	name string
	ctx  context.Context
	shot *shots
}

func (s *shots) person(root context.Context, t *testing.T, name string) *person {
	ctx, cancel := chromedp.NewContext(root, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	// The first Run opens the tab and ties it to its context: run it without a deadline
	// so the later steps' timeouts do not close the tab.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("open a browser tab for %s: %v", name, err)
	}
	return &person{t: t, name: name, ctx: ctx, shot: s}
}

// do runs steps with a deadline, failing the test with what was being done.
func (p *person) do(what string, timeout time.Duration, steps ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, timeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		p.snap("failed-" + strings.ReplaceAll(what, " ", "-"))
		p.t.Fatalf("%s (%s): %v", what, p.name, err)
	}
}

// count is how many elements match the CSS selector.
func (p *person) count(sel string) int {
	p.t.Helper()
	n, err := chromedp.Run(p.ctx, chromedp.Evaluate[int](fmt.Sprintf("document.querySelectorAll(%q).length", sel)))
	if err != nil {
		p.t.Fatalf("count %s: %v", sel, err)
	}
	return n
}

// text is the text of the first element matching sel, once there is one.
func (p *person) text(sel string) string {
	p.t.Helper()
	return p.await(fmt.Sprintf("the text of %s", sel), 30*time.Second,
		fmt.Sprintf(`document.querySelector(%q)?.textContent.trim() ?? null`, sel))
}

// await polls a JavaScript expression until it yields a string (not null) and returns
// it. Each poll is one evaluation in the page, so the poller swapping the live part or
// a navigation under way cannot split a lookup from a read; an evaluation that fails
// because the page is navigating is tried again.
func (p *person) await(what string, timeout time.Duration, js string) string {
	p.t.Helper()
	var got string
	err := testutil.Poll(timeout, func() error {
		ctx, cancel := context.WithTimeout(p.ctx, 5*time.Second)
		defer cancel()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[*string](js))
		if err != nil {
			return err
		}
		if v == nil {
			return fmt.Errorf("not there yet")
		}
		got = *v
		return nil
	})
	if err != nil {
		p.snap("failed-await")
		p.t.Fatalf("%s (%s): %v", what, p.name, err)
	}
	return got
}

// shots numbers and writes the screenshots of a test into its output folder
// (t.ArtifactDir: kept by `go test -artifacts -outputdir DIR`), and copies them under
// the package's state directory when the test fails, which is kept then.
type shots struct {
	t   *testing.T
	dir string
	n   atomic.Int32
}

func newShots(t *testing.T) *shots {
	dir := t.ArtifactDir()
	t.Logf("screenshots in %s", dir)
	// Registered after ArtifactDir's own clean-up, so it runs before the folder goes.
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		kept := filepath.Join(suite.StateDir, "screenshots")
		if err := os.CopyFS(kept, os.DirFS(dir)); err != nil {
			t.Logf("keep the screenshots: %v", err)
			return
		}
		t.Logf("screenshots kept in %s", kept)
	})
	return &shots{t: t, dir: dir}
}

// snap writes a full-page PNG of what p sees and returns its path.
func (p *person) snap(step string) string {
	ctx, cancel := context.WithTimeout(p.ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		p.t.Errorf("screenshot %s: %v", step, err)
		return ""
	}
	path := filepath.Join(p.shot.dir, fmt.Sprintf("%02d-%s-%s.png", p.shot.n.Add(1), p.name, step))
	if err := os.WriteFile(path, png, 0o644); err != nil {
		p.t.Errorf("write %s: %v", path, err)
	}
	return path
}
