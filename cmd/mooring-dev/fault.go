package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/mooringhq/mooring/internal/localcluster"
)

const faultUsage = `mooring-dev fault node-stop [NODE] | node-start [NODE] | partition [NAMESPACE/]POD | heal [NAMESPACE/]POD | kill [NAMESPACE/]POD CONTAINER`

// faultArgs are the operands each fault takes after its name.
var faultArgs = map[string]int{"node-stop": 0, "node-start": 0, "partition": 1, "heal": 1, "kill": 2}

// faultCommand causes a fault on the running cluster's real nodes, or undoes one (see
// localcluster's faults.go). node-stop and node-start are done by the run, which owns
// the kubelets; the others act on a pod directly, on whichever real node it is.
func faultCommand(ctx context.Context, cfg config, args []string, out io.Writer) error {
	n, ok := faultArgs[args[0]]
	nodeFault := args[0] == "node-stop" || args[0] == "node-start"
	// A node fault names its node; without a name it is the first, RealNodeName. A name
	// no local cluster's real node can have is refused here; one this run does not have
	// (mooring-real-3 of a cluster of two) is refused by the run, naming its nodes.
	if nodeFault {
		node := localcluster.RealNodeName
		if len(args) == 2 {
			node = args[1]
		}
		possible := localcluster.RealNodeNames(localcluster.MaxRealNodes)
		if !slices.Contains(possible, node) {
			return fmt.Errorf("%s: no real node %q: the local cluster's real nodes are %s (as many as it has, see --real-nodes)",
				args[0], node, strings.Join(possible, ", "))
		}
		client, err := controlClient(cfg.state)
		if err != nil {
			return err
		}
		return post(ctx, client, "/fault/"+args[0]+"/"+node, out)
	}
	if !ok || len(args)-1 != n {
		return fmt.Errorf("usage: %s", faultUsage)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", filepath.Join(cfg.state, "kubeconfig"))
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	ns, pod := "default", args[1]
	if before, after, found := strings.Cut(pod, "/"); found {
		ns, pod = before, after
	}
	switch args[0] {
	case "partition":
		err = localcluster.Partition(ctx, cs, ns, pod)
	case "heal":
		err = localcluster.Heal(ctx, cs, ns, pod)
	case "kill":
		var pid int
		if pid, err = localcluster.KillContainer(ctx, cs, ns, pod, args[2]); err == nil {
			fmt.Fprintf(out, "mooring-dev: killed pid %d (container %s of %s/%s)\n", pid, args[2], ns, pod)
			return nil
		}
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "mooring-dev: %s %s/%s done\n", args[0], ns, pod)
	return nil
}
