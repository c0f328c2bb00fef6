package localcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Options configures Start.
type Options struct {
	// BinDir is the directory with the binaries and the kwok-module-dir file
	// (bin/k8s, filled by hack/tools/build.sh).
	BinDir string
	// StateDir holds the etcd data, certificates, logs/ and kubeconfig. It is created if
	// missing and reused across restarts.
	StateDir string
	// Nodes is the number of simulated kwok nodes; 0 means 3.
	Nodes int
	// Out receives one progress line per step; nil discards them.
	Out io.Writer
	// APIServerArgs are extra kube-apiserver flags, e.g. --enable-aggregator-routing=true
	// (webhooks called at their Service's endpoints rather than its ClusterIP).
	APIServerArgs []string
	// RealNode adds a node with a real kubelet and container runtime (RealNodeName)
	// beside the simulated ones; see RealNode's values.
	RealNode RealNode
	// RealNodes is how many real nodes a cluster with RealNode gets, RealNodeName and
	// RealNodeName-2 and so on (RealNodeNames); 0 means 1. More than MaxRealNodes is
	// refused.
	RealNodes int
	// NodeImages returns the image archives to load into the real node's containerd
	// (which can pull from no registry): at least the pause image, sandboxImage.
	// Required with a real node.
	NodeImages func(context.Context) ([]string, error)
	// Supervisor, when set, watches the components and restarts one that exits
	// unexpectedly, per its Backoff. Without one an unexpected exit is reported on
	// Cluster.Exited and nothing restarts.
	Supervisor *Supervisor
}

// requiredBinaries are the files Start needs in Options.BinDir.
var requiredBinaries = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"}

// MissingBinaries returns the names of the binaries Start needs that are absent from
// binDir, so callers (tests, mooring-dev) can skip or explain before starting anything.
func MissingBinaries(binDir string) []string {
	var missing []string
	for _, name := range requiredBinaries {
		if _, err := os.Stat(filepath.Join(binDir, name)); err != nil {
			missing = append(missing, name)
		}
	}
	return missing
}

// complete fills defaults, makes the paths absolute (the processes must not depend on
// the caller's working directory) and checks the binaries exist.
func (o Options) complete() (Options, error) {
	if o.BinDir == "" || o.StateDir == "" {
		return o, errors.New("localcluster: BinDir and StateDir are required")
	}
	if o.Nodes < 0 {
		return o, fmt.Errorf("localcluster: Nodes must not be negative, got %d", o.Nodes)
	}
	if o.Nodes == 0 {
		o.Nodes = 3
	}
	if o.RealNodes < 0 || o.RealNodes > MaxRealNodes {
		return o, fmt.Errorf("localcluster: %d real nodes asked for; one machine runs 1 to %d (each is a containerd and a kubelet with a pod range of its own)",
			o.RealNodes, MaxRealNodes)
	}
	if o.RealNodes == 0 {
		o.RealNodes = 1
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	var err error
	if o.BinDir, err = filepath.Abs(o.BinDir); err != nil {
		return o, fmt.Errorf("localcluster: bin dir: %w", err)
	}
	if o.StateDir, err = filepath.Abs(o.StateDir); err != nil {
		return o, fmt.Errorf("localcluster: state dir: %w", err)
	}
	if missing := MissingBinaries(o.BinDir); len(missing) > 0 {
		return o, fmt.Errorf("localcluster: %s missing in %s (build them with hack/tools/build.sh)",
			strings.Join(missing, ", "), o.BinDir)
	}
	return o, nil
}
