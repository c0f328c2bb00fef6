// Command portalbench measures what the portal adds to a user's reads: it starts an API
// server with Mooring's CRDs and manager (envtest, as the integration tests do), the
// portal in-process under its production RBAC, and developers each with a namespace of
// Apps and CacheInstances; then it sends the same open-loop stream of list and get
// requests through the portal and straight to the API server (impersonating the same
// users, as the portal does) and reports the rate achieved and the latency percentiles
// of each. `make bench-portal` runs it; docs/performance.md has the numbers.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

type config struct {
	users, apps, caches int
	rate                float64
	duration, block     time.Duration
	out, cpuProfile     string
	seed                int64
}

func main() {
	os.Exit(run())
}

func run() int {
	// The portal's controller-runtime parts (its User cache) log through this; the
	// benchmark keeps its output to the table.
	ctrllog.SetLogger(logr.Discard())
	var c config
	flag.IntVar(&c.users, "users", 20, "Concurrent users, each a developer in a namespace of its own.")
	flag.IntVar(&c.apps, "apps", 20, "Apps in each user's namespace.")
	flag.IntVar(&c.caches, "caches", 10, "CacheInstances in each user's namespace.")
	flag.Float64Var(&c.rate, "rate", 200, "Requests per second sent to each target (open loop).")
	flag.DurationVar(&c.duration, "duration", 30*time.Second, "How long each target is driven in all.")
	flag.DurationVar(&c.block, "block", 5*time.Second, "The targets take turns for this long each, so that both see the machine's load as it changes.")
	flag.StringVar(&c.out, "out", "bin/bench", "Directory for portal.json.")
	flag.StringVar(&c.cpuProfile, "cpuprofile", "", "Write a CPU profile of this process (the portal runs in it, and the load generator) while the targets are driven.")
	flag.Int64Var(&c.seed, "seed", 1, "Seed of the request stream, the same for both targets.")
	flag.Parse()
	if c.users < 1 || c.apps < 1 || c.caches < 0 || c.rate <= 0 || c.duration <= 0 || c.block <= 0 || c.block > c.duration {
		fmt.Fprintln(os.Stderr, "portalbench: --users and --apps must be at least 1, --caches at least 0, --rate, --duration and --block positive, --block at most --duration")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	r, err := bench(ctx, c)
	if err != nil {
		fmt.Fprintln(os.Stderr, "portalbench:", err)
		return 1
	}
	if err := writeTable(os.Stdout, r); err != nil {
		fmt.Fprintln(os.Stderr, "portalbench:", err)
		return 1
	}
	if err := writeJSON(filepath.Join(c.out, "portal.json"), r); err != nil {
		fmt.Fprintln(os.Stderr, "portalbench:", err)
		return 1
	}
	if r.Direct.Errors+r.Portal.Errors > 0 {
		fmt.Fprintf(os.Stderr, "portalbench: %d direct and %d portal requests failed\n", r.Direct.Errors, r.Portal.Errors)
		return 1
	}
	return 0
}

// bench sets up the cluster, the portal and the users, then drives both targets with
// the same request stream, taking turns in blocks: the API server directly for a block,
// then the portal for the same requests, and on.
func bench(ctx context.Context, c config) (Report, error) {
	fx, err := setUp(ctx, c)
	if fx != nil {
		defer fx.close()
	}
	if err != nil {
		return Report{}, err
	}
	stream := newStream(c.seed, fx.users, c.apps, c.caches)
	started, before := time.Now(), load1()
	targets := []struct {
		name    string
		t       target
		results []result
		elapsed time.Duration
	}{{name: "direct", t: fx.direct}, {name: "portal", t: fx.portal}}
	for _, t := range targets {
		if err := warmUp(ctx, t.t, stream); err != nil {
			return Report{}, fmt.Errorf("%s: warm-up: %w", t.name, err)
		}
	}
	if c.cpuProfile != "" {
		f, err := os.Create(c.cpuProfile)
		if err != nil {
			return Report{}, err
		}
		defer func() { _ = f.Close() }()
		if err := pprof.StartCPUProfile(f); err != nil {
			return Report{}, err
		}
		defer pprof.StopCPUProfile()
	}
	perBlock, total := int(c.rate*c.block.Seconds()), int(c.rate*c.duration.Seconds())
	fmt.Fprintf(os.Stderr, "Driving the API server directly and the portal in turns of %s at %.0f req/s, %s each\n", c.block, c.rate, c.duration)
	for first := 0; first < total; first += perBlock {
		n := min(perBlock, total-first)
		for i := range targets {
			res, elapsed, err := drive(ctx, targets[i].name, targets[i].t, stream, first, n, c.rate)
			if err != nil {
				return Report{}, err
			}
			targets[i].results, targets[i].elapsed = append(targets[i].results, res...), targets[i].elapsed+elapsed
		}
	}
	direct := summarize("direct", targets[0].results, c.rate, targets[0].elapsed)
	portal := summarize("portal", targets[1].results, c.rate, targets[1].elapsed)
	r := newReport(direct, portal)
	r.Users, r.ObjectsPerUser, r.Duration, r.Started = c.users, c.apps+c.caches, c.duration.String(), started
	r.Load1Before, r.Load1After = before, load1()
	if r.Revocation, err = measureRevocation(ctx, fx.admin, fx.pc); err != nil {
		return r, err
	}
	return r, nil
}

func writeJSON(path string, r Report) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// load1 is the one-minute load average, or -1 where /proc/loadavg is not there.
func load1() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	var l float64
	if _, err := fmt.Sscan(string(b), &l); err != nil {
		return -1
	}
	return l
}
