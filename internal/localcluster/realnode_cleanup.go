package localcluster

import (
	"bufio"
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

// cgroupFS is where the cgroup hierarchies are mounted.
const cgroupFS = "/sys/fs/cgroup"

// removeNodeState removes what a real node leaves on the machine once its processes are
// stopped: the containers' processes (under cgroupRoot) and containerd's shims, the
// mounts under the node's directories (volumes, overlay root filesystems, network
// namespaces), the pods' cgroups, and the directories themselves. The containers'
// network interfaces go with their namespaces. It is also how a start recovers what a
// killed run left behind. It goes on after a failed step and reports every failure.
func removeNodeState(p nodePaths) error {
	var errs []error
	// Twice: a process forked while the first pass ran is killed by the second.
	for range 2 {
		for _, pid := range nodeProcesses(p) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	if left := waitProcessesGone(p, 10*time.Second); len(left) > 0 {
		errs = append(errs, fmt.Errorf("processes %v survived SIGKILL", left))
	}
	errs = appendErr(errs, unmountUnder(p.dir, p.run))
	errs = appendErr(errs, removeCgroups())
	for _, dir := range []string{p.dir, p.run} {
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, fmt.Errorf("remove %s: %w", dir, err))
		}
	}
	return errors.Join(errs...)
}

// nodeProcesses returns the processes that belong to the node: every task in a cgroup
// under cgroupRoot (containers and their sandboxes), and the containerd shims of the
// node's containerd (found by the socket on their command line).
func nodeProcesses(p nodePaths) []int {
	var pids []int
	for _, procs := range cgroupProcFiles() {
		pids = append(pids, readPids(procs)...)
	}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(cmdline), "\x00")
		if len(args) > 0 && strings.HasPrefix(filepath.Base(args[0]), "containerd-shim") &&
			slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, p.run) || strings.HasPrefix(a, p.dir) }) {
			pids = append(pids, pid)
		}
	}
	slices.Sort(pids)
	return slices.Compact(pids)
}

// cgroupProcFiles lists the cgroup.procs files of every cgroup under cgroupRoot in
// every hierarchy (cgroup v1 mounts one per controller; v2 one in all).
func cgroupProcFiles() []string {
	var files []string
	for _, root := range cgroupRoots() {
		_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && d.Name() == "cgroup.procs" {
				files = append(files, path)
			}
			return nil
		})
	}
	return files
}

// cgroupRoots are the cgroupRoot directories that exist, one per hierarchy.
func cgroupRoots() []string {
	var roots []string
	entries, _ := os.ReadDir(cgroupFS)
	for _, e := range entries {
		dir := filepath.Join(cgroupFS, e.Name(), cgroupRoot)
		if _, err := os.Stat(dir); err == nil {
			roots = append(roots, dir)
		}
	}
	if _, err := os.Stat(filepath.Join(cgroupFS, cgroupRoot)); err == nil {
		roots = append(roots, filepath.Join(cgroupFS, cgroupRoot))
	}
	return roots
}

func readPids(path string) []int {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var pids []int
	for _, f := range strings.Fields(string(raw)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

func waitProcessesGone(p nodePaths, timeout time.Duration) []int {
	deadline := time.Now().Add(timeout)
	for {
		left := slices.DeleteFunc(nodeProcesses(p), func(pid int) bool {
			// A zombie whose parent has not reaped it yet is gone for our purposes.
			stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
			return err != nil || strings.Contains(string(stat), ") Z ")
		})
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(pollInterval)
	}
}

// unmountUnder detaches every mount below the given directories, deepest first.
func unmountUnder(dirs ...string) error {
	mounts, err := mountPoints()
	if err != nil {
		return err
	}
	var under []string
	for _, m := range mounts {
		for _, d := range dirs {
			if m == d || strings.HasPrefix(m, d+"/") {
				under = append(under, m)
			}
		}
	}
	// Longest first: a mount inside another goes before its parent.
	slices.SortFunc(under, func(a, b string) int { return len(b) - len(a) })
	var errs []error
	for _, m := range slices.Compact(under) {
		if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
			errs = append(errs, fmt.Errorf("unmount %s: %w", m, err))
		}
	}
	return errors.Join(errs...)
}

// mountPoints lists this mount namespace's mount points from /proc/self/mountinfo.
func mountPoints() ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	var points []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 {
			points = append(points, unescapeMount(fields[4]))
		}
	}
	return points, sc.Err()
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// removeCgroups removes the (now empty) cgroups under cgroupRoot, children first.
func removeCgroups() error {
	var errs []error
	for _, root := range cgroupRoots() {
		var dirs []string
		_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		slices.SortFunc(dirs, func(a, b string) int { return len(b) - len(a) })
		for _, d := range dirs {
			if err := syscall.Rmdir(d); err != nil && !errors.Is(err, syscall.ENOENT) {
				errs = append(errs, fmt.Errorf("remove cgroup %s: %w", d, err))
			}
		}
	}
	return errors.Join(errs...)
}

// Leftovers lists what a real node leaves on this machine while it runs, or after a run
// that was killed before it could clean up: processes, mounts, the bridge and its
// interfaces, iptables chains and rules, routes, containerd state and cgroups. With
// state directories, it also lists what is left of each after Clean: mounts, volume
// directories, the directory. Empty means nothing is left. Tests call it after a cluster
// stopped (and, with its state directory, after Clean).
func Leftovers(ctx context.Context, stateDirs ...string) []string {
	p, ok := ownerPaths()
	if !ok {
		p = nodePaths{run: realNodeRunDir}
	}
	var left []string
	if p.dir != "" {
		if pids := nodeProcesses(p); len(pids) > 0 {
			left = append(left, fmt.Sprintf("processes %v", pids))
		}
	}
	if mounts, err := mountPoints(); err == nil {
		for _, m := range mounts {
			if strings.HasPrefix(m, realNodeRunDir+"/") || (p.dir != "" && strings.HasPrefix(m, p.dir+"/")) {
				left = append(left, "mount "+m)
			}
		}
	}
	if quiet(ctx, "ip", "link", "show", bridgeName) == nil {
		left = append(left, "bridge "+bridgeName)
	}
	if out, err := runOutput(ctx, "ip", "-o", "link", "show", "master", bridgeName); err == nil && strings.TrimSpace(out) != "" {
		left = append(left, "interfaces on "+bridgeName)
	}
	for _, g := range guardChains() {
		if quiet(ctx, "iptables", "-w", "-n", "-L", g.name) == nil {
			left = append(left, "iptables chain "+g.name)
		}
	}
	if hasKubeChains(ctx) {
		left = append(left, "kube-proxy's or the kubelet's iptables chains")
	}
	if out, err := runOutput(ctx, "ip", "route", "show", "table", "all"); err == nil {
		for _, r := range append([]string{serviceCIDR}, unreachableRoutes...) {
			if strings.Contains(out, r) {
				left = append(left, "route "+r)
			}
		}
	}
	if _, err := os.Stat(realNodeRunDir); err == nil {
		left = append(left, "directory "+realNodeRunDir)
	}
	if p.dir != "" {
		if _, err := os.Stat(p.dir); err == nil {
			left = append(left, "directory "+p.dir)
		}
	}
	if roots := cgroupRoots(); len(roots) > 0 {
		left = append(left, "cgroups "+strings.Join(roots, ", "))
	}
	for _, dir := range stateDirs {
		left = append(left, stateLeftovers(dir)...)
	}
	return left
}

func runOutput(ctx context.Context, argv ...string) (string, error) {
	out, err := execCommand(ctx, argv...).Output()
	return string(out), err
}

// makeCgroupRoots creates cgroupRoot, and each node's cgroup below it, in every cgroup
// v1 hierarchy (the kubelet refuses a cgroup root that is missing in any), with cpuset's
// CPUs and memory nodes copied from the parent, which a new cpuset cgroup starts without.
func makeCgroupRoots(nodes []member) error {
	entries, err := os.ReadDir(cgroupFS)
	if err != nil {
		return err
	}
	dirs := []string{cgroupRoot}
	for _, m := range nodes {
		dirs = append(dirs, m.cgroupRoot())
	}
	for _, e := range entries {
		hierarchy := filepath.Join(cgroupFS, e.Name())
		if _, err := os.Stat(filepath.Join(hierarchy, "cgroup.procs")); err != nil || e.Name() == "unified" {
			continue
		}
		for _, d := range dirs {
			dir := filepath.Join(hierarchy, d)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return fmt.Errorf("create cgroup %s: %w", dir, err)
			}
			if e.Name() != "cpuset" {
				continue
			}
			for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
				v, err := os.ReadFile(filepath.Join(filepath.Dir(dir), f))
				if err != nil {
					return err
				}
				if err := os.WriteFile(filepath.Join(dir, f), v, 0o644); err != nil {
					return fmt.Errorf("set %s of %s: %w", f, dir, err)
				}
			}
		}
	}
	return nil
}
