package clusterenv

import (
	"bufio"
	"bytes"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mooringhq/mooring/internal/testutil"
)

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
	cmd := e.Kubectl("apply", "-n", ns, "-f", "-")
	cmd.Stdin = strings.NewReader(manifest)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
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
		got, err := e.Run("get", "-n", ns, resource, "-o", "jsonpath={"+path+"}")
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
	resp, err := http.Get("http://" + addr + "/metrics")
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

// Writes lists the write requests (anything but GET and WATCH) in a scrape of
// mooring_api_requests_total, leaving out the resources named in except.
func Writes(m map[string]float64, except ...string) map[string]float64 {
	out := map[string]float64{}
	for k, v := range m {
		if !strings.HasPrefix(k, "mooring_api_requests_total{") || v == 0 {
			continue
		}
		if strings.Contains(k, `method="GET"`) || strings.Contains(k, `method="WATCH"`) {
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
	cmd := e.Kubectl(args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errOut.String()))
	}
	return out.String(), nil
}

// WaitAllField polls until a kubectl jsonpath equals want for every object of a resource
// type in ns, and there is at least one.
func (e *Env) WaitAllField(t testing.TB, timeout time.Duration, ns, resource, path, want string) {
	t.Helper()
	testutil.Eventually(t, timeout, fmt.Sprintf("every %s with %s == %q", resource, path, want), func() error {
		out, err := e.Run("get", "-n", ns, resource, "-o", `jsonpath={range .items[*]}{.metadata.name}={`+path+`}{"\n"}{end}`)
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
