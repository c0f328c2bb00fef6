package localcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Reboot does to this machine what a reboot does to a cluster that was running on
// stateDir, for tests of the start that follows: every process of the cluster is gone
// (killed), and with them everything the kernel held (mounts, network namespaces,
// interfaces, iptables rules, routes, cgroups) and /run, the real node's lock and owner
// file included; the state directory stays as it was on disk, the real node's part
// (<stateDir>/node) too. binDir is Options.BinDir (kube-proxy removes its own rules).
func Reboot(ctx context.Context, stateDir, binDir string) error {
	stateDir, err := filepath.Abs(stateDir)
	if err != nil {
		return err
	}
	p := newNodePaths(stateDir)
	var errs []error
	for range 2 {
		for _, pid := range append(clusterProcesses(stateDir), nodeProcesses(p)...) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for left := clusterProcesses(stateDir); len(left) > 0; left = clusterProcesses(stateDir) {
		if time.Now().After(deadline) {
			errs = append(errs, fmt.Errorf("processes %v survived SIGKILL", left))
			break
		}
		time.Sleep(pollInterval)
	}
	if left := waitProcessesGone(p, 10*time.Second); len(left) > 0 {
		errs = append(errs, fmt.Errorf("node processes %v survived SIGKILL", left))
	}
	errs = appendErr(errs, unmountUnder(stateDir, p.run))
	errs = appendErr(errs, removeCgroups())
	errs = appendErr(errs, networkDown(ctx, p, filepath.Join(binDir, "kube-proxy")))
	for _, path := range []string{realNodeRunDir, realNodeLock} {
		if err := os.RemoveAll(path); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// clusterProcesses are the live processes whose command line names a path in stateDir:
// the control plane's and the node's components, and a mooring-dev run on it.
func clusterProcesses(stateDir string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(cmdline), stateDir+"/") {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil || strings.Contains(string(stat), ") Z ") {
			continue
		}
		pids = append(pids, pid)
	}
	slices.Sort(pids)
	return pids
}
