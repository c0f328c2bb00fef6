package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/mooringhq/mooring/internal/devenv"
	"github.com/mooringhq/mooring/internal/localcluster"
	"github.com/mooringhq/mooring/internal/nodeimage"
	"github.com/mooringhq/mooring/internal/ociimage"
	"github.com/mooringhq/mooring/internal/version"
)

// run starts everything, stays until a signal or a crash, then stops everything in
// reverse order.
//
//nolint:gocyclo // one linear start-up sequence in the order a reader expects; each step is a call
func run(parent context.Context, cfg config) (err error) {
	fmt.Printf("mooring-dev %s: starting\n", version.String())
	kubeconfig, external := externalKubeconfig(cfg.state)
	if err := preflight(cfg, external); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(cfg.state, "logs"), 0o755); err != nil {
		return fmt.Errorf("create state dir: %w", err)
	}
	if err := os.WriteFile(filepath.Join(cfg.state, markerFile), []byte("state directory of mooring-dev\n"), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", markerFile, err)
	}
	if id, ok := running(cfg.state); ok && id.pid != os.Getpid() {
		return fmt.Errorf("already running (pid %d) with state %s; stop it with: mooring-dev down", id.pid, cfg.state)
	}
	me := selfID()
	if err := writePid(cfg.state, me); err != nil {
		return err
	}
	_ = os.Remove(filepath.Join(cfg.state, readyFile))
	defer removeOwn(cfg.state, me)

	ctx, stopSignals := signal.NotifyContext(parent, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer stopSignals()
	out := os.Stdout

	// Every process started below is watched by sup and restarted when it exits on its
	// own; messages about it go to stderr (the log in the background).
	sup := localcluster.NewSupervisor(localcluster.Backoff{Initial: cfg.restartDelay, Max: cfg.restartMaxDelay,
		ResetAfter: localcluster.DefaultBackoff.ResetAfter}, os.Stderr)

	// Stop in reverse start order however run ends.
	var stops []func()
	defer func() {
		// Nothing exits unexpectedly from here on: a process that goes because another
		// one stopped first is not restarted.
		sup.Shutdown()
		if len(stops) > 0 {
			fmt.Fprintln(out, "mooring-dev: stopping")
		}
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
		if len(stops) > 0 {
			fmt.Fprintln(out, "mooring-dev: stopped")
		}
	}()
	// interrupted replaces errors caused by a signal during start-up.
	interrupted := func(err error) error {
		if ctx.Err() != nil {
			return errors.New("interrupted")
		}
		return err
	}

	var restConfig *rest.Config
	var node nodeFaults
	if external {
		fmt.Fprintf(out, "mooring-dev: using the cluster of KUBECONFIG=%s (MOORING_CLUSTER=local for a local one)\n",
			os.Getenv("KUBECONFIG"))
		if restConfig, err = externalConfig(); err != nil {
			return err
		}
	} else {
		realNode, realNodes, err := realNodeMode(cfg.realNode, cfg.realNodes)
		if err != nil {
			return err
		}
		c, err := localcluster.Start(ctx, localcluster.Options{
			BinDir: cfg.binDir, StateDir: cfg.state, Nodes: cfg.nodes, Out: out,
			RealNode: realNode, RealNodes: realNodes, NodeImages: nodeImages(cfg, out), Supervisor: sup,
		})
		if err != nil {
			return interrupted(err)
		}
		stops = append(stops, func() {
			if err := c.Stop(); err != nil {
				fmt.Fprintf(os.Stderr, "mooring-dev: stop cluster: %v\n", err)
			}
		})
		kubeconfig = c.KubeconfigPath
		restConfig = c.Config
		if c.HasRealNode() {
			node = c
		}
	}

	// The operator serves its webhooks on this host; the configurations installed
	// here call https://localhost:<port>, a port of its own per run.
	webhookPort, err := localcluster.FreePort()
	if err != nil {
		return err
	}
	t0 := time.Now()
	installCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	err = devenv.Install(installCtx, restConfig, cfg.root, webhookPort)
	cancel()
	if err != nil {
		return interrupted(fmt.Errorf("install CRDs and webhook configurations: %w", err))
	}
	fmt.Fprintf(out, "mooring-dev: CRDs established, webhooks point at https://localhost:%d (%s)\n", webhookPort, since(t0))

	var echo io.Writer
	if !cfg.detached {
		echo = out
	}
	opLog := filepath.Join(cfg.state, "logs", "mooring.log")
	t0 = time.Now()
	op, err := localcluster.StartOperator(ctx, localcluster.OperatorOptions{
		Binary: cfg.operator, Kubeconfig: kubeconfig, LogPath: opLog, Echo: echo,
		Args: devenv.OperatorArgs(cfg.state, webhookPort), Supervisor: sup,
	})
	if err != nil {
		return interrupted(err)
	}
	stops = append(stops, func() {
		if err := op.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "mooring-dev: stop operator: %v\n", err)
		}
	})
	// Samples go through the webhooks, which work once the operator has injected its
	// CA into their configurations.
	if err := waitWebhooks(ctx, restConfig, op); err != nil {
		return interrupted(err)
	}
	fmt.Fprintf(out, "mooring-dev: operator ready, webhooks served (%s), pid %d, log %s\n", since(t0), op.Pid(), opLog)
	fmt.Fprintf(out, "mooring-dev: metrics served at http://%s/metrics (Prometheus text; see docs/metrics.md)\n", op.MetricsAddr)

	k := kubectl{
		path:       filepath.Join(cfg.binDir, "kubectl"),
		kubeconfig: kubeconfig,
		cacheDir:   filepath.Join(cfg.state, "kubectl-cache"),
		stdout:     out,
		stderr:     os.Stderr,
	}
	samples := manifestArgs(cfg.samples)
	if err := k.run(ctx, append([]string{"apply", "--server-side", "--field-manager=mooring-dev"}, samples...)...); err != nil {
		return interrupted(err)
	}
	if err := k.run(ctx, append([]string{"get"}, samples...)...); err != nil {
		return interrupted(err)
	}
	if _, err := os.Stat(cfg.portal); err != nil {
		fmt.Fprintf(out, "mooring-dev: no portal binary at %s; build it with `make build` to run the portal too\n", cfg.portal)
	} else {
		t0 = time.Now()
		p, err := startPortal(ctx, cfg, restConfig, echo, sup)
		if err != nil {
			return interrupted(err)
		}
		stops = append(stops, func() {
			if err := p.Stop(); err != nil {
				fmt.Fprintf(os.Stderr, "mooring-dev: stop portal: %v\n", err)
			}
		})
		fmt.Fprintf(out, "mooring-dev: portal ready (%s) at %s, pid %d, log %s\n", since(t0), p.URL, p.Pid(), p.LogPath)
		fmt.Fprintf(out, "mooring-dev: portal web UI at %s/ui/ (API at %s/api/v1)\n", p.URL, p.URL)
		fmt.Fprintf(out, "mooring-dev: portal admin: user admin, password in %s (mode 0600)\n", filepath.Join(cfg.state, adminPasswordFile))
	}
	stopControl, err := serveControl(ctx, cfg.state, sup, node)
	if err != nil {
		return err
	}
	stops = append(stops, stopControl)
	printHints(out, cfg, external)
	if err := writeReady(cfg.state, readyInfo{Pid: me.pid, Readyz: op.ReadyzURL(), Kubeconfig: kubeconfig}); err != nil {
		return err
	}

	select {
	case <-ctx.Done():
		// A second Ctrl-C now kills mooring-dev at once; the children follow through
		// their parent-death signal.
		stopSignals()
		fmt.Fprintln(out, "mooring-dev: signal received (again to kill)")
		return nil
	case err := <-sup.Exited(): // only with --restart-delay=0
		return fmt.Errorf("stopped unexpectedly (restarts are off): %w", err)
	}
}

// externalKubeconfig decides which cluster to use. A set KUBECONFIG wins unless
// MOORING_CLUSTER=local, or it is the kubeconfig of this state dir: printHints tells
// users to export that one, and it must not turn the next run into an "external" run
// against a cluster that is down. The path is empty when KUBECONFIG lists several
// files; the operator and kubectl then read the variable themselves.
func externalKubeconfig(state string) (string, bool) {
	env := os.Getenv("KUBECONFIG")
	if env == "" || os.Getenv("MOORING_CLUSTER") == "local" {
		return "", false
	}
	own, _ := filepath.Abs(filepath.Join(state, "kubeconfig"))
	paths := filepath.SplitList(env)
	for _, p := range paths {
		if abs, _ := filepath.Abs(p); abs == own {
			return "", false
		}
	}
	if len(paths) == 1 {
		return paths[0], true
	}
	return "", true
}

// preflight checks the inputs before anything starts, with messages that say how to
// produce what is missing.
func preflight(cfg config, external bool) error {
	var problems []string
	if _, err := os.Stat(filepath.Join(cfg.binDir, "kubectl")); err != nil {
		problems = append(problems, fmt.Sprintf("%s/kubectl not found: build the tools with hack/tools/build.sh", cfg.binDir))
	}
	if !external {
		if missing := localcluster.MissingBinaries(cfg.binDir); len(missing) > 0 {
			problems = append(problems, fmt.Sprintf("%s not found in %s: build the tools with hack/tools/build.sh",
				strings.Join(missing, ", "), cfg.binDir))
		}
	}
	if st, err := os.Stat(cfg.operator); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
		problems = append(problems, fmt.Sprintf("operator binary %s not found or not executable: build it first (go build -o %s ./cmd/mooring)",
			cfg.operator, cfg.operator))
	}
	if crds := filepath.Join(cfg.root, "config", "crd", "bases"); !hasManifests(crds) {
		problems = append(problems, fmt.Sprintf("no CRD manifests in %s: generate them first (make manifests)", crds))
	}
	if !hasManifests(cfg.samples) {
		problems = append(problems, fmt.Sprintf("no sample manifests in %s", cfg.samples))
	}
	if len(problems) > 0 {
		return errors.New("cannot start:\n  - " + strings.Join(problems, "\n  - "))
	}
	return nil
}

// printHints tells the user how to reach the cluster.
func printHints(out io.Writer, cfg config, external bool) {
	kubectlPath := filepath.Join(cfg.binDir, "kubectl")
	fmt.Fprintln(out, "mooring-dev: ready. Use kubectl against it:")
	if !external {
		fmt.Fprintf(out, "  export KUBECONFIG=%s\n", shellPath(filepath.Join(cfg.state, "kubeconfig")))
	}
	fmt.Fprintf(out, "  %s get apps\n", kubectlPath)
	fmt.Fprintln(out, "mooring-dev: components that exit are restarted; see them with: mooring-dev status; restart one with: mooring-dev restart <component>")
	if cfg.detached {
		fmt.Fprintln(out, "mooring-dev: running in the background; stop it with: mooring-dev down")
	} else {
		fmt.Fprintln(out, "mooring-dev: Ctrl-C stops the operator and the cluster")
	}
}

// shellPath spells a path for copying into a shell: relative paths are anchored at
// $PWD so the export works from any directory afterwards.
func shellPath(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return "$PWD/" + filepath.ToSlash(filepath.Clean(p))
}

// waitWebhooks polls until the operator has injected its CA into the webhook
// configurations, failing early if the operator exits.
func waitWebhooks(ctx context.Context, cfg *rest.Config, op *localcluster.Operator) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	ticker := time.NewTicker(250 * time.Millisecond)
	defer ticker.Stop()
	for {
		err := devenv.WebhooksReady(ctx, cfg)
		if err == nil {
			return nil
		}
		select {
		case exitErr := <-op.Exited():
			return fmt.Errorf("operator stopped before its webhooks were ready: %w", exitErr)
		case <-ctx.Done():
			return fmt.Errorf("webhooks not ready after 2m (last: %w); operator log %s", err, op.LogPath)
		case <-ticker.C:
		}
	}
}

// externalConfig loads the client configuration the way kubectl does, so a KUBECONFIG
// listing several files works too.
func externalConfig() (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("load KUBECONFIG: %w", err)
	}
	return cfg, nil
}

func since(t time.Time) string { return time.Since(t).Round(100 * time.Millisecond).String() }

// realNodeMode reads --real-node and --real-nodes: --real-nodes 0 is --real-node off,
// and more than the machine runs is refused with the reason.
func realNodeMode(s string, n int) (localcluster.RealNode, int, error) {
	if n < 0 || n > localcluster.MaxRealNodes {
		return "", 0, fmt.Errorf("--real-nodes is %d; want 0 (none) to %d: each real node is a containerd and a kubelet with a pod range of its own, and more would crowd the machine",
			n, localcluster.MaxRealNodes)
	}
	var mode localcluster.RealNode
	switch s {
	case "auto":
		mode = localcluster.RealNodeAuto
	case "on":
		mode = localcluster.RealNodeOn
	case "off":
		mode = localcluster.RealNodeOff
	default:
		return "", 0, fmt.Errorf("--real-node is %q; want auto, on or off", s)
	}
	if n == 0 {
		mode = localcluster.RealNodeOff
	}
	return mode, n, nil
}

// nodeImages are the images the real node gets: the pause image and the stand-ins the
// samples run (built from Debian's packages once per machine, internal/nodeimage), and
// the operator's and the portal's from `make image` when they were built.
func nodeImages(cfg config, out io.Writer) func(context.Context) ([]string, error) {
	return func(ctx context.Context) ([]string, error) {
		specs := nodeimage.Startup()
		// The samples' databases: built once per machine, a few minutes the first time.
		for _, ref := range []string{"docker.io/library/postgres:18", "docker.io/library/mariadb:11.8"} {
			if s, ok := nodeimage.Find(ref); ok {
				specs = append(specs, s)
			}
		}
		archives, err := nodeimage.EnsureAll(ctx, specs, nodeimage.Options{Log: out})
		if err != nil {
			return nil, err
		}
		manager, err := instanceManagerImage(cfg)
		if err != nil {
			return nil, err
		}
		archives = append(archives, manager)
		for _, name := range []string{"mooring.tar", "mooring-portal.tar"} {
			path := filepath.Join(cfg.root, "bin", "image", name)
			if _, err := os.Stat(path); err == nil {
				archives = append(archives, path)
			}
		}
		return archives, nil
	}
}

// instanceManagerImage packs bin/mooring (static, `make build`) into an image the
// database pods copy their instance manager from, as they do from the operator's image
// on a real cluster, and returns its tarball.
func instanceManagerImage(cfg config) (string, error) {
	bin, err := os.ReadFile(filepath.Join(cfg.root, "bin", "mooring"))
	if err != nil {
		return "", fmt.Errorf("the instance manager's image: %w (make build)", err)
	}
	img, err := ociimage.Build(ociimage.Spec{Name: "mooring", Binary: bin,
		Platform: v1.Platform{OS: "linux", Architecture: runtime.GOARCH}, Created: time.Unix(0, 0).UTC()})
	if err != nil {
		return "", err
	}
	path := filepath.Join(cfg.state, "instance-manager.tar")
	return path, ociimage.WriteTarball(path, img, devenv.InstanceManagerImage)
}
