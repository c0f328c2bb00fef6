package clusterenv

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mooringhq/mooring/internal/testutil"
)

// Each kubectl run and each scrape is bounded, because testutil.Poll cannot interrupt a
// check: a request to an API server that hangs (etcd stopped, a webhook that never
// answers) would otherwise hold a poll past its deadline until go test's own timeout,
// instead of failing with what the poll awaited.
const (
	// kubectlTimeout bounds one kubectl of Run, RunStdin and Apply; longer than any the
	// tests run on purpose (the longest waits up to 60 s for a deletion).
	kubectlTimeout = 2 * time.Minute
	// attemptTimeout bounds one kubectl get of WaitField and WaitAllField, which poll
	// again after it; a get answers in well under a second when the cluster is healthy.
	attemptTimeout = 15 * time.Second
)

// scrapeClient bounds one scrape of Scrape; an answer takes milliseconds.
var scrapeClient = &http.Client{Timeout: 10 * time.Second}

// Run runs kubectl as the cluster admin and returns its standard output; the error carries
// its standard error.
func (e *Env) Run(args ...string) (string, error) { return e.RunStdin("", args...) }

// MustRun is Run that fails the test on error.
func (e *Env) MustRun(t testing.TB, args ...string) string {
	t.Helper()
	out, err := e.Run(args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Apply pipes a manifest into kubectl apply in namespace ns.
func (e *Env) Apply(t testing.TB, ns, manifest string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), kubectlTimeout)
	defer cancel()
	cmd := e.KubectlContext(ctx, "apply", "-n", ns, "-f", "-")
	cmd.Stdin = strings.NewReader(manifest)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", killed(ctx, kubectlTimeout, err), out)
	}
}

// Namespace creates a namespace for one test.
func (e *Env) Namespace(t testing.TB, name string) string {
	t.Helper()
	e.MustRun(t, "create", "namespace", name)
	return name
}

// WaitField polls a kubectl jsonpath of resource until it equals want.
func (e *Env) WaitField(t testing.TB, timeout time.Duration, ns, resource, path, want string) {
	t.Helper()
	testutil.Eventually(t, timeout, fmt.Sprintf("%s %s == %q", resource, path, want), func() error {
		got, err := e.runFor(attemptTimeout, "", "get", "-n", ns, resource, "-o", "jsonpath={"+path+"}")
		if err != nil {
			return err
		}
		if strings.TrimSpace(got) != want {
			return fmt.Errorf("%s is %q", path, got)
		}
		return nil
	})
}

// Scrape reads Prometheus metrics from http://<addr>/metrics as "name{labels}" → value.
func Scrape(addr string) (map[string]float64, error) {
	resp, err := scrapeClient.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		out[line[:i]] = v
	}
	return out, sc.Err()
}

// Writes lists the write requests (anything but GET, WATCH and DRYRUN) in a scrape of
// mooring_api_requests_total, leaving out the resources named in except.
func Writes(m map[string]float64, except ...string) map[string]float64 {
	out := map[string]float64{}
	for k, v := range m {
		if !strings.HasPrefix(k, "mooring_api_requests_total{") || v == 0 {
			continue
		}
		if strings.Contains(k, `method="GET"`) || strings.Contains(k, `method="WATCH"`) || strings.Contains(k, `method="DRYRUN"`) {
			continue
		}
		skip := false
		for _, r := range except {
			skip = skip || strings.Contains(k, `resource="`+r+`"`)
		}
		if !skip {
			out[k] = v
		}
	}
	return out
}

// RunStdin is Run with stdin, e.g. a manifest for `apply -f -`.
func (e *Env) RunStdin(stdin string, args ...string) (string, error) {
	return e.runFor(kubectlTimeout, stdin, args...)
}

// runFor is RunStdin killing kubectl after timeout.
func (e *Env) runFor(timeout time.Duration, stdin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := e.KubectlContext(ctx, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), killed(ctx, timeout, err), strings.TrimSpace(errOut.String()))
	}
	return out.String(), nil
}

// killed says so when err comes from a kubectl killed at the end of ctx.
func killed(ctx context.Context, timeout time.Duration, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("killed after %s: %w", timeout, err)
	}
	return err
}

// WaitAllField polls until a kubectl jsonpath equals want for every object of a resource
// type in ns, and there is at least one.
func (e *Env) WaitAllField(t testing.TB, timeout time.Duration, ns, resource, path, want string) {
	t.Helper()
	testutil.Eventually(t, timeout, fmt.Sprintf("every %s with %s == %q", resource, path, want), func() error {
		out, err := e.runFor(attemptTimeout, "", "get", "-n", ns, resource, "-o", `jsonpath={range .items[*]}{.metadata.name}={`+path+`}{"\n"}{end}`)
		if err != nil {
			return err
		}
		lines := strings.Fields(out)
		if len(lines) == 0 {
			return fmt.Errorf("no %s", resource)
		}
		for _, l := range lines {
			if !strings.HasSuffix(l, "="+want) {
				return fmt.Errorf("%s", l)
			}
		}
		return nil
	})
}

// JSONPath reads one field of resource in ns with kubectl get -o jsonpath (path without
// the braces, e.g. ".status.phase").
func (e *Env) JSONPath(ns, resource, path string) (string, error) {
	return e.Run("get", "-n", ns, resource, "-o", "jsonpath={"+path+"}")
}
