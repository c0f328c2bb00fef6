package localcluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Faults the tests (and `mooring-dev fault`) cause on the real nodes, each undone by its
// pair: a node that dies as a machine does (NodeStop, NodeStart), a pod cut off the
// network (Partition, Heal), a container's process killed (KillContainer). Packets are
// dropped, not refused: a peer sees silence, as with a dead machine or a cut cable.

// faultChain holds the fault rules, jumped to first from INPUT, OUTPUT and FORWARD while
// the node runs; it is one of guardChains, so tear-down removes it.
const faultChain = "MOORING-FAULTS"

// ContainerPID returns the PID on this machine of the main process of a container of a
// pod on a real node, found through that node's containerd.
func ContainerPID(ctx context.Context, cs kubernetes.Interface, namespace, pod, container string) (int, error) {
	p, err := cs.CoreV1().Pods(namespace).Get(ctx, pod, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return 0, fmt.Errorf("pod %s/%s does not exist", namespace, pod)
	}
	if err != nil {
		return 0, err
	}
	var names []string
	id := ""
	for _, s := range append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		names = append(names, s.Name)
		if s.Name == container {
			id = strings.TrimPrefix(s.ContainerID, "containerd://")
		}
	}
	if !slices.Contains(names, container) {
		return 0, fmt.Errorf("pod %s/%s has no container %q; it has %s", namespace, pod, container, strings.Join(names, ", "))
	}
	socket, err := podNodeSocket(p)
	if err != nil {
		return 0, err
	}
	if id == "" {
		return 0, fmt.Errorf("container %s of pod %s/%s has not started", container, namespace, pod)
	}
	out, err := exec.CommandContext(ctx, "ctr", "--address", socket, "-n", "k8s.io", "tasks", "ls").CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("ctr tasks ls: %w: %s", err, lastLine(out))
	}
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(id) + `\s+(\d+)\s+RUNNING`).FindStringSubmatch(string(out))
	if m == nil {
		return 0, fmt.Errorf("container %s of pod %s/%s is not running", container, namespace, pod)
	}
	return strconv.Atoi(m[1])
}

// KillContainer kills the main process of a container of a pod on a real node with
// SIGKILL, as a crash or the OOM killer ends it; the kubelet restarts it per the pod's
// restart policy. It returns the PID it killed.
func KillContainer(ctx context.Context, cs kubernetes.Interface, namespace, pod, container string) (int, error) {
	pid, err := ContainerPID(ctx, cs, namespace, pod, container)
	if err != nil {
		return 0, err
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return 0, fmt.Errorf("kill %d: %w", pid, err)
	}
	return pid, nil
}

// Partition cuts a pod on a real node off the network while it keeps running: every
// packet to or from its address is dropped, to and from the API server and CoreDNS (the
// host) and every other pod, also through a Service. Heal undoes it.
func Partition(ctx context.Context, cs kubernetes.Interface, namespace, pod string) error {
	ip, err := podIP(ctx, cs, namespace, pod)
	if err != nil {
		return err
	}
	for _, r := range dropRules(ip) {
		if quiet(ctx, append([]string{"iptables", "-w", "-C", faultChain}, r...)...) == nil {
			continue // partitioned already
		}
		if err := run(ctx, append([]string{"iptables", "-w", "-A", faultChain}, r...)...); err != nil {
			return err
		}
	}
	return nil
}

// Heal undoes Partition; a pod that is not partitioned is left as it is.
func Heal(ctx context.Context, cs kubernetes.Interface, namespace, pod string) error {
	ip, err := podIP(ctx, cs, namespace, pod)
	if err != nil {
		return err
	}
	return deleteRules(ctx, dropRules(ip))
}

func podIP(ctx context.Context, cs kubernetes.Interface, namespace, pod string) (string, error) {
	p, err := cs.CoreV1().Pods(namespace).Get(ctx, pod, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", fmt.Errorf("pod %s/%s does not exist", namespace, pod)
	}
	if err != nil {
		return "", err
	}
	if _, err := podNodeSocket(p); err != nil {
		return "", err
	}
	if p.Status.PodIP == "" || p.Spec.HostNetwork {
		return "", fmt.Errorf("pod %s/%s has no address of its own on the pod network", namespace, pod)
	}
	return p.Status.PodIP, nil
}

// podNodeSocket is the containerd socket of the running real node a pod is on, or an
// error saying the pod is not on one.
func podNodeSocket(p *corev1.Pod) (string, error) {
	sockets, err := runningNodeSockets()
	if err != nil {
		return "", err
	}
	socket, ok := sockets[p.Spec.NodeName]
	if !ok {
		names := slices.Sorted(maps.Keys(sockets))
		return "", fmt.Errorf("pod %s/%s runs on %s, not on a real node (%s)", p.Namespace, p.Name, p.Spec.NodeName, strings.Join(names, ", "))
	}
	return socket, nil
}

func dropRules(addr string) [][]string {
	return [][]string{{"-s", addr, "-j", "DROP"}, {"-d", addr, "-j", "DROP"}}
}

func deleteRules(ctx context.Context, rules [][]string) error {
	for _, r := range rules {
		for quiet(ctx, append([]string{"iptables", "-w", "-D", faultChain}, r...)...) == nil {
		}
	}
	return nil
}

// nodeStopRules drop every packet from or to a node's pod subnet except those to the
// host's address in it (the first node's is where the API server and CoreDNS listen,
// which pods of the other nodes still reach) and the host's own to elsewhere (the API
// server's to the other nodes' pods): the control plane lives on; only the node's pods
// go silent, to the host too.
func nodeStopRules(m member) [][]string {
	return [][]string{
		{"-d", m.ip, "-j", "RETURN"},
		{"-s", m.ip, "!", "-d", m.podSubnet, "-j", "RETURN"},
		{"-s", m.podSubnet, "-j", "DROP"},
		{"-d", m.podSubnet, "-j", "DROP"},
	}
}

// freezerState is a node's cgroup v1 freezer file: writing FROZEN freezes every
// container of the node at once (their cgroups are below the node's).
func freezerState(m member) string {
	return filepath.Join(cgroupFS, "freezer", m.cgroupRoot(), "freezer.state")
}

// NodeStop makes a real node die as a machine does, without a word to anyone: its
// kubelet stops (no status, no lease renewal: the control plane marks the node NotReady
// after its grace period), its containers are frozen, and every packet to or from its
// pods is dropped. NodeStart undoes all of it. A name that is not one of the cluster's
// real nodes is refused, naming them, and nothing changes.
func (c *Cluster) NodeStop(ctx context.Context, node string) error {
	m, err := c.realMember(node)
	if err != nil {
		return err
	}
	for _, r := range nodeStopRules(m) {
		if quiet(ctx, append([]string{"iptables", "-w", "-C", faultChain}, r...)...) == nil {
			continue // stopped already
		}
		if err := run(ctx, append([]string{"iptables", "-w", "-A", faultChain}, r...)...); err != nil {
			return err
		}
	}
	if err := os.WriteFile(freezerState(m), []byte("FROZEN"), 0o644); err != nil {
		return fmt.Errorf("freeze the containers of node %s: %w", m.name, err)
	}
	// Stopped with SIGKILL: a kubelet that stops cleanly would say goodbye.
	return c.killComponent(m.component(kubeletComponent))
}

// NodeStart brings a node stopped by NodeStop back: packets flow, the containers thaw,
// and the kubelet starts again and reports the node Ready.
func (c *Cluster) NodeStart(ctx context.Context, node string) error {
	m, err := c.realMember(node)
	if err != nil {
		return err
	}
	if err := deleteRules(ctx, nodeStopRules(m)); err != nil {
		return err
	}
	if err := os.WriteFile(freezerState(m), []byte("THAWED"), 0o644); err != nil {
		return fmt.Errorf("thaw the containers of node %s: %w", m.name, err)
	}
	return c.StartComponent(ctx, m.component(kubeletComponent))
}

// realMember is the cluster's real node of that name.
func (c *Cluster) realMember(node string) (member, error) {
	if c.node == nil {
		return member{}, errors.New("localcluster: this cluster has no real node")
	}
	m, err := c.node.member(node)
	if err != nil {
		return member{}, fmt.Errorf("localcluster: %w", err)
	}
	return m, nil
}
