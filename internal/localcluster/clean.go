package localcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Clean deletes a stopped cluster's state directory and, with it, everything of the
// cluster on this machine: what a killed run left of its real node (processes, mounts,
// network, which a start would otherwise remove), mounts left under the directory, and
// the directory itself with the etcd data and the volumes. binDir is Options.BinDir
// (kube-proxy's clean-up mode removes its rules). A cluster still running refuses.
func Clean(ctx context.Context, stateDir, binDir string) error {
	stateDir, err := filepath.Abs(stateDir)
	if err != nil {
		return err
	}
	var errs []error
	if owner, ok := ownerPaths(); ok && owner.dir == newNodePaths(stateDir).dir {
		lock, err := acquireNodeLock()
		if err != nil {
			return fmt.Errorf("clean %s: %w", stateDir, err)
		}
		n := &realNode{paths: owner, lock: lock, kubeProxy: filepath.Join(binDir, "kube-proxy")}
		errs = appendErr(errs, n.stop(ctx))
	}
	errs = appendErr(errs, unmountUnder(stateDir))
	if err := os.RemoveAll(stateDir); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// stateLeftovers lists what is left of a cluster in its state directory after Clean:
// mounts under it, its volumes' directories, the directory itself.
func stateLeftovers(stateDir string) []string {
	var left []string
	if mounts, err := mountPoints(); err == nil {
		for _, m := range mounts {
			if strings.HasPrefix(m, stateDir+"/") {
				left = append(left, "mount "+m)
			}
		}
	}
	entries, _ := os.ReadDir(volumesDir(stateDir))
	for _, e := range entries {
		left = append(left, "volume directory "+filepath.Join(volumesDir(stateDir), e.Name()))
	}
	if _, err := os.Stat(stateDir); err == nil {
		left = append(left, "directory "+stateDir)
	}
	return left
}
