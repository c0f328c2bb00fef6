// Command mooring-dev runs Mooring against a local, container-free Kubernetes cluster
// for development; it is what the Makefile's dev targets call.
//
//	mooring-dev run    start cluster, CRDs, operator and samples; stay in the foreground
//	mooring-dev up     the same in the background; returns once the operator is ready
//	mooring-dev down   stop what "up" (or a "run" elsewhere) started
//	mooring-dev clean  down, then delete the state directory
//	mooring-dev restart <component>  restart one component of the running cluster
//	mooring-dev status  each component of the running cluster: state, pid, restarts
//	mooring-dev image load <archive>...  import images into every running real node
//	mooring-dev image list  the images the running real nodes have
//	mooring-dev fault ...  faults of the real nodes: node-stop, node-start, partition, heal, kill
//	mooring-dev version  print the version (also --version)
//
// The cluster comes from internal/localcluster, unless KUBECONFIG is set and
// MOORING_CLUSTER is not "local": then the cluster KUBECONFIG points at is used and
// left running. The CRDs and webhook configurations are installed by internal/devenv,
// which points the webhooks at the operator running on this host, so an external
// cluster must be able to reach https://localhost:<port> (a cluster on this machine).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/mooringhq/mooring/internal/localcluster"
	"github.com/mooringhq/mooring/internal/version"
)

// config holds the flags shared by all subcommands.
type config struct {
	state    string
	operator string
	portal   string
	samples  string
	root     string
	binDir   string
	nodes    int
	realNode string
	// realNodes is --real-nodes: how many real nodes (0: none).
	realNodes int
	timeout   time.Duration
	detached  bool // set by "up" on the background "run" it starts
	// restartDelay and restartMaxDelay are the supervisor's backoff; a zero delay turns
	// restarts off, so the first component to die stops everything.
	restartDelay, restartMaxDelay time.Duration
}

const usage = `usage: mooring-dev <run|up|down|clean|restart|status|image|fault|version> [flags]

  run    start the local cluster, install the CRDs and webhook configurations, run the
         operator (serving the webhooks on localhost), apply the samples; stay in the
         foreground until Ctrl-C, then stop everything
  up     the same in the background (log in <state>/logs/dev.log); idempotent
  down   stop a running "up"; fine when nothing runs
  clean  down, then delete the state directory
  restart <component>
         stop one component of the running cluster and start it again, e.g. operator,
         portal, kube-apiserver (an unknown name lists them); the others keep running
  status each component of the running cluster: state, pid, restarts, last exit, log
  image load <archive>...
         import image archives (docker save, OCI layout tars, make image) into every running real node
  image list
         the images the running real nodes have
  fault node-stop [NODE] | node-start [NODE] | partition [NS/]POD | heal [NS/]POD | kill [NS/]POD CONTAINER
         a real node (mooring-real when not named) dies as a machine does (kubelet
         killed, containers frozen, packets dropped) and comes back; a pod is cut off
         the network and healed; a container's process is killed
  version  print the version (also --version)

A component that exits on its own is restarted after 1s, doubling to 30s while it
keeps failing (see docs/local-cluster.md).

KUBECONFIG set and MOORING_CLUSTER != local: use that cluster instead of a local one.

flags:
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		newFlagSet("run", &config{}).PrintDefaults()
		os.Exit(2)
	}
	cmd := os.Args[1]
	switch cmd {
	case "version", "-version", "--version":
		version.Print(os.Stdout, "mooring-dev")
		return
	}
	var cfg config
	fs := newFlagSet(cmd, &cfg)
	// The arguments may come before the flags or after them.
	args, operands := os.Args[2:], []string(nil)
	for len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		operands, args = append(operands, args[0]), args[1:]
	}
	if err := fs.Parse(args); err != nil {
		os.Exit(2)
	}
	operands = append(operands, fs.Args()...)
	if want, ok := commandOperands[cmd]; ok && !want.fits(operands) {
		fmt.Fprintln(os.Stderr, "usage: "+want.usage)
		os.Exit(2)
	}
	component := ""
	if cmd == "restart" {
		component = operands[0]
	}
	ctx := context.Background()
	var err error
	switch cmd {
	case "run":
		err = run(ctx, cfg)
	case "up":
		err = up(ctx, cfg)
	case "down":
		err = down(cfg)
	case "clean":
		err = clean(cfg)
	case "restart":
		err = restartComponent(ctx, cfg, component, os.Stdout)
	case "status":
		err = showStatus(ctx, cfg, os.Stdout)
	case "image":
		err = imageCommand(ctx, operands, os.Stdout)
	case "fault":
		err = faultCommand(ctx, cfg, operands, os.Stdout)
	case "help", "-h", "--help":
		fmt.Fprint(os.Stdout, usage)
		fs.SetOutput(os.Stdout)
		fs.PrintDefaults()
		return
	default:
		err = fmt.Errorf("unknown command %q (want run, up, down, clean, restart, status, image, fault or version)", cmd)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "mooring-dev %s: %v\n", cmd, err)
		os.Exit(1)
	}
}

func newFlagSet(name string, cfg *config) *flag.FlagSet {
	fs := flag.NewFlagSet("mooring-dev "+name, flag.ContinueOnError)
	fs.StringVar(&cfg.state, "state", ".mooring", "state directory: cluster data, certificates, kubeconfig, logs")
	fs.StringVar(&cfg.operator, "operator", "bin/mooring", "operator binary")
	fs.StringVar(&cfg.portal, "portal", "bin/mooring-portal", "portal binary, run beside the operator when present")
	fs.StringVar(&cfg.samples, "samples", "config/samples", "sample manifests applied once the operator is ready")
	fs.StringVar(&cfg.root, "root", ".", "repository root: CRDs from config/crd/bases, webhook configurations from config/webhook")
	fs.StringVar(&cfg.binDir, "bin-dir", "bin/k8s", "control-plane binaries and kubectl (hack/tools/build.sh)")
	fs.IntVar(&cfg.nodes, "nodes", 3, "simulated nodes in the local cluster")
	fs.StringVar(&cfg.realNode, "real-node", "auto", "real nodes (a kubelet and containerd each) beside the simulated ones: auto (when the machine allows it), on or off")
	fs.IntVar(&cfg.realNodes, "real-nodes", 1, fmt.Sprintf("how many real nodes: mooring-real, mooring-real-2, ...; 0: none; at most %d", localcluster.MaxRealNodes))
	fs.DurationVar(&cfg.timeout, "timeout", 5*time.Minute, "how long up waits for the operator to be ready")
	fs.DurationVar(&cfg.restartDelay, "restart-delay", localcluster.DefaultBackoff.Initial,
		"wait before restarting a component that exited; doubles while it keeps failing; 0: no restarts, the first exit stops everything")
	fs.DurationVar(&cfg.restartMaxDelay, "restart-max-delay", localcluster.DefaultBackoff.Max, "longest wait between restarts")
	fs.BoolVar(&cfg.detached, "detached", false, "internal: set on the background run started by up")
	return fs
}
