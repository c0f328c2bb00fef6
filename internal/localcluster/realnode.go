package localcluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// RealNode says whether a cluster gets a real node beside the simulated ones.
type RealNode string

const (
	// RealNodeOff runs kwok's simulated nodes only (the default).
	RealNodeOff RealNode = ""
	// RealNodeAuto adds a real node when the machine allows it, and otherwise says why in
	// one line and runs on the simulated nodes.
	RealNodeAuto RealNode = "auto"
	// RealNodeOn requires a real node: Start fails when the machine cannot run one.
	RealNodeOn RealNode = "on"
)

// realNodeRunDir holds the real node's sockets and runtime state. There is one real node
// per machine (one bridge, one set of NAT rules); realNodeLock says who has it.
const (
	realNodeRunDir = "/run/mooring-node"
	realNodeLock   = "/run/mooring-node.lock"
)

func ownerFile() string { return realNodeRunDir + "/owner" }

// ownerPaths are the paths of the node the owner file names (the last one started on
// this machine, possibly by a run that was killed); ok is false when there is none.
func ownerPaths() (p nodePaths, ok bool) {
	owner, err := os.ReadFile(ownerFile())
	if err != nil || strings.TrimSpace(string(owner)) == "" {
		return nodePaths{}, false
	}
	// The file holds the node directory, <StateDir>/node.
	return newNodePaths(filepath.Dir(strings.TrimSpace(string(owner)))), true
}

// Host tools the real node runs, with the Debian package that has each.
var realNodeHostTools = []struct{ name, pkg string }{
	{"containerd", "containerd"},
	{"containerd-shim-runc-v2", "containerd"},
	{"ctr", "containerd"},
	{"runc", "runc"},
	{"iptables", "iptables"},
	{"ip", "iproute2"},
}

// realNodeBinaries are the Go-built binaries (hack/tools/build.sh) in Options.BinDir.
var realNodeBinaries = []string{"kubelet", "kube-proxy", "coredns"}

// RealNodeSupport reports why this machine cannot run a real node, with the fix, or nil
// when it can. It checks what can be checked without changing anything.
func RealNodeSupport(binDir string) error {
	if runtime.GOOS != "linux" {
		return fmt.Errorf("a real node needs Linux, this is %s", runtime.GOOS)
	}
	if os.Geteuid() != 0 {
		return errors.New("a real node needs root (containerd, the bridge and NAT rules); run as root")
	}
	if fs, err := os.ReadFile("/proc/filesystems"); err != nil || !strings.Contains(string(fs), "\toverlay\n") {
		return errors.New("the kernel has no overlay filesystem, which containerd's snapshotter needs; load the overlay module (modprobe overlay)")
	}
	for _, ctl := range []string{"cpu", "memory", "pids"} {
		if !hasCgroupController(ctl) {
			return fmt.Errorf("no %s cgroup controller is mounted under %s; mount the cgroup hierarchies (cgroup v1 or v2)", ctl, cgroupFS)
		}
	}
	if _, err := os.Stat("/proc/sys/net/bridge/bridge-nf-call-iptables"); err != nil {
		return errors.New("the kernel has no bridge netfilter (br_netfilter), which Services between pods need; load it (modprobe br_netfilter)")
	}
	var missing, pkgs []string
	for _, t := range realNodeHostTools {
		if _, err := exec.LookPath(t.name); err != nil {
			missing = append(missing, t.name)
			pkgs = appendUnique(pkgs, t.pkg)
		}
	}
	for _, plugin := range []string{"bridge", "host-local", "portmap", "loopback"} {
		if _, err := os.Stat(filepath.Join(cniBinDir, plugin)); err != nil {
			missing = append(missing, cniBinDir+"/"+plugin)
			pkgs = appendUnique(pkgs, "containernetworking-plugins")
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s missing; install Debian's %s (apt-get install %s)",
			strings.Join(missing, ", "), strings.Join(pkgs, ", "), strings.Join(pkgs, " "))
	}
	for _, b := range realNodeBinaries {
		if _, err := os.Stat(filepath.Join(binDir, b)); err != nil {
			return fmt.Errorf("%s missing in %s; build it with `make tools`", b, binDir)
		}
	}
	return nil
}

func hasCgroupController(name string) bool {
	if _, err := os.Stat(filepath.Join(cgroupFS, name)); err == nil {
		return true
	}
	ctl, err := os.ReadFile(filepath.Join(cgroupFS, "cgroup.controllers"))
	return err == nil && strings.Contains(" "+string(ctl)+" ", " "+name+" ")
}

func appendUnique(s []string, v string) []string {
	for _, x := range s {
		if x == v {
			return s
		}
	}
	return append(s, v)
}

// nodeLock is the machine's real-node lock, held for the life of the node. The kernel
// drops it when the holder dies, so a killed run never blocks the next one, which then
// finds what the killed run left behind and removes it first.
type nodeLock struct{ f *os.File }

func acquireNodeLock() (*nodeLock, error) {
	f, err := os.OpenFile(realNodeLock, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", realNodeLock, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(realNodeLock)
		_ = f.Close()
		return nil, fmt.Errorf("another local cluster on this machine runs the real node (%s); one machine has one real node, so stop that cluster first",
			strings.TrimSpace(string(holder)))
	}
	_ = f.Truncate(0)
	_, _ = fmt.Fprintf(f, "pid %d", os.Getpid())
	return &nodeLock{f: f}, nil
}

func (l *nodeLock) release() {
	if l != nil && l.f != nil {
		_ = syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
		_ = l.f.Close()
	}
}

// realNode is a cluster's running real nodes: per node a containerd and a kubelet
// (members), and kube-proxy and CoreDNS for all of them (which run as processes of the
// cluster, like the control plane), the network they share with the pods, and the lock
// that makes them the machine's only ones. paths are the first node's, inside which every
// other node's files are.
type realNode struct {
	paths     nodePaths
	members   []member
	lock      *nodeLock
	kubeProxy string // binary, for its clean-up mode
	ports     nodePorts
	// kubeletPKI are each kubelet's serving files, by node name (writeNodePKI).
	kubeletPKI map[string]kubeletPKI
	// registry is where containerd's registry requests go (realnode_registry.go).
	registry *registryRefusal
}

// prepareRealNode takes the machine's real nodes: the lock, the removal of what a killed
// run left, and the network, which must exist before the API server binds nodeIP.
func prepareRealNode(ctx context.Context, o Options) (*realNode, error) {
	lock, err := acquireNodeLock()
	if err != nil {
		return nil, err
	}
	root := newNodePaths(o.StateDir)
	n := &realNode{paths: root, members: members(root, o.RealNodes), lock: lock, kubeProxy: filepath.Join(o.BinDir, "kube-proxy")}
	if err := n.removeLeftovers(ctx); err != nil {
		lock.release()
		return nil, fmt.Errorf("remove what an earlier real node left behind: %w", err)
	}
	for _, m := range n.members {
		for _, d := range []string{m.paths.run, m.paths.configs, m.paths.cniConf, m.paths.podLogs} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				_ = n.stop(ctx)
				return nil, err
			}
		}
	}
	if err := os.WriteFile(ownerFile(), []byte(n.paths.dir), 0o644); err != nil {
		_ = n.stop(ctx)
		return nil, err
	}
	if err := networkUp(ctx, n.paths, n.members); err != nil {
		_ = n.stop(ctx)
		return nil, fmt.Errorf("node network: %w", err)
	}
	if err := makeCgroupRoots(n.members); err != nil {
		_ = n.stop(ctx)
		return nil, err
	}
	return n, nil
}

// member returns the node of that name, or an error naming the cluster's real nodes.
func (n *realNode) member(name string) (member, error) {
	var names []string
	for _, m := range n.members {
		if m.name == name {
			return m, nil
		}
		names = append(names, m.name)
	}
	return member{}, fmt.Errorf("no real node %q; the real nodes are %s", name, strings.Join(names, ", "))
}

// removeLeftovers removes a previous node's state: the one this state directory had, and
// the one the owner file names (a killed run elsewhere on the machine).
func (n *realNode) removeLeftovers(ctx context.Context) error {
	var errs []error
	if owner, ok := ownerPaths(); ok && owner.dir != n.paths.dir {
		errs = appendErr(errs, removeNodeState(owner))
	}
	errs = appendErr(errs, removeNodeState(n.paths))
	errs = appendErr(errs, networkDown(ctx, n.paths, n.kubeProxy))
	return errors.Join(errs...)
}

// stop removes the node's state and network once its processes are stopped, and
// releases the lock.
func (n *realNode) stop(ctx context.Context) error {
	if n == nil {
		return nil
	}
	defer n.lock.release()
	n.registry.close()
	err := removeNodeState(n.paths)
	return errors.Join(err, networkDown(ctx, n.paths, n.kubeProxy))
}

// realNodeReady holds once the real node is Ready and free of the not-ready taint.
func realNodeReady(cs kubernetes.Interface, name string) check {
	return func(ctx context.Context) (bool, string) {
		node, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if s := nodeProblem(node); s != "" {
			return false, s
		}
		return true, ""
	}
}

// dnsAnswers holds once CoreDNS resolves the API server's Service name.
func dnsAnswers(ctx context.Context) (bool, string) {
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, net.JoinHostPort(nodeIP, "53"))
	}}
	addrs, err := r.LookupHost(ctx, "kubernetes.default.svc."+clusterDomain)
	if err != nil {
		return false, err.Error()
	}
	if len(addrs) == 0 || addrs[0] != serviceIP {
		return false, fmt.Sprintf("kubernetes.default.svc resolved to %v, want %s", addrs, serviceIP)
	}
	return true, ""
}

// simulatedTaint keeps ordinary workloads off the simulated nodes while a real node runs;
// a pod that tolerates it (a scale test) may still land on them.
var simulatedTaint = corev1.Taint{Key: kwokNodeAnnotation, Value: "fake", Effect: corev1.TaintEffectNoSchedule}

// setSimulatedTaints adds or removes simulatedTaint on the simulated nodes.
func setSimulatedTaints(ctx context.Context, cs kubernetes.Interface, n int, tainted bool) error {
	for i := range n {
		node, err := cs.CoreV1().Nodes().Get(ctx, nodeName(i), metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("get node %s: %w", nodeName(i), err)
		}
		has := false
		var kept []corev1.Taint
		for _, t := range node.Spec.Taints {
			if t.Key == simulatedTaint.Key {
				has = true
				continue
			}
			kept = append(kept, t)
		}
		if has == tainted {
			continue
		}
		if tainted {
			kept = append(kept, simulatedTaint)
		}
		node.Spec.Taints = kept
		if _, err := cs.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("taint node %s: %w", node.Name, err)
		}
	}
	return nil
}

func execCommand(ctx context.Context, argv ...string) *exec.Cmd {
	return exec.CommandContext(ctx, argv[0], argv[1:]...)
}

// ports of the shared node components on 127.0.0.1 (each kubelet's are in its member).
type nodePorts struct {
	proxyHealthz, proxyMetrics, dnsHealth, dnsReady int
}

// pickNodePorts picks the shared ports and each member's kubelet ports.
func (n *realNode) pickNodePorts() (nodePorts, error) {
	p, err := freePorts(4 + 2*len(n.members))
	if err != nil {
		return nodePorts{}, err
	}
	for i := range n.members {
		n.members[i].ports = memberPorts{kubelet: p[4+2*i], kubeletHealthz: p[5+2*i]}
	}
	return nodePorts{p[0], p[1], p[2], p[3]}, nil
}
