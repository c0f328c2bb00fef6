package real

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mooringhq/mooring/internal/localcluster"
	"github.com/mooringhq/mooring/internal/testutil"
)

// dropWait is how long a connection attempt waits before a dropped packet is taken for
// a drop: a refusal or an answer comes within milliseconds here.
const dropWait = 2 * time.Second

// appPod starts a one-replica web App and returns its ready pod.
func appPod(t *testing.T, ns, name string) corev1.Pod {
	t.Helper()
	createApp(t, webApp(ns, name, 1))
	waitApp(t, ns, name, metav1.ConditionTrue, 3*time.Minute)
	pods, err := suite.cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + name})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("want one pod of App %s: %v %v", name, err, pods)
	}
	return pods.Items[0]
}

// dial connects to addr from this machine: nil when it answers, else the error and how
// long the attempt took.
func dial(addr string) (time.Duration, error) {
	t0 := time.Now()
	conn, err := net.DialTimeout("tcp", addr, dropWait)
	if err == nil {
		_ = conn.Close()
	}
	return time.Since(t0), err
}

// wantDropped fails unless a connection to addr times out (packets dropped, not refused).
func wantDropped(t *testing.T, addr, what string) {
	t.Helper()
	took, err := dial(addr)
	var ne net.Error
	if err == nil || !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("%s: a connection to %s ended after %s with %v; want it dropped (a timeout after %s)", what, addr, took.Round(time.Millisecond), err, dropWait)
	}
}

// TestPartitionAndHeal: a partitioned pod keeps running but nothing reaches it, neither
// this machine nor another pod (packets dropped, not refused); healed, it answers again.
// A fault on a pod or container that does not exist says so and changes nothing.
func TestPartitionAndHeal(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := newNamespace(t, "partition")
	pod := appPod(t, ns, "island")
	addr := net.JoinHostPort(pod.Status.PodIP, "8080")
	if _, err := dial(addr); err != nil {
		t.Fatalf("before the partition: %v", err)
	}
	pid, err := localcluster.ContainerPID(ctx, suite.cs, ns, pod.Name, "app")
	if err != nil {
		t.Fatal(err)
	}

	if err := localcluster.Partition(ctx, suite.cs, ns, pod.Name); err != nil {
		t.Fatal(err)
	}
	wantDropped(t, addr, "partitioned")
	out := runClient(t, ns, "neighbour", `if wget -q -T 3 -O /dev/null http://`+addr+`/; then echo REACHED; else echo cut; fi`)
	if !strings.Contains(out, "cut") {
		t.Fatalf("another pod reached the partitioned pod: %q", out)
	}
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("the partitioned pod's process %d must keep running: %v", pid, err)
	}

	if err := localcluster.Heal(ctx, suite.cs, ns, pod.Name); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, "the healed pod to answer", func() error { _, err := dial(addr); return err })
	waitApp(t, ns, "island", metav1.ConditionTrue, 2*time.Minute)

	for name, fault := range map[string]func() error{
		"partition of a missing pod": func() error { return localcluster.Partition(ctx, suite.cs, ns, "nobody") },
		"kill of a missing pod":      func() error { _, err := localcluster.KillContainer(ctx, suite.cs, ns, "nobody", "app"); return err },
		"kill of a missing container": func() error {
			_, err := localcluster.KillContainer(ctx, suite.cs, ns, pod.Name, "sidecar")
			return err
		},
	} {
		err := fault()
		if err == nil || !strings.Contains(err.Error(), "nobody") && !strings.Contains(err.Error(), "no container \"sidecar\"; it has app") {
			t.Errorf("%s: %v, want an error naming what does not exist", name, err)
		}
	}
	if _, err := dial(addr); err != nil {
		t.Fatalf("after the refused faults: %v", err)
	}
}

// TestNodeStopAndStart: node-stop of the first node (whose address the API server
// shares) kills its kubelet, freezes its containers and drops their packets, while the
// control plane answers; node-start brings all of it back and the node reports Ready
// again. `mooring-dev fault` runs the same functions. TestNodeLossKeepsServing stops the
// other node.
func TestNodeStopAndStart(t *testing.T) {
	// Not parallel: half the tier's pods run on this node.
	ctx := context.Background()
	ns := newNamespace(t, "node-stop")
	createApp(t, webApp(ns, "sleeper", 2))
	waitApp(t, ns, "sleeper", metav1.ConditionTrue, 3*time.Minute)
	var pod corev1.Pod
	for name, node := range wantOnePerNode(t, ns, "app.kubernetes.io/instance=sleeper") {
		if node == localcluster.RealNodeName {
			p, err := suite.cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			pod = *p
		}
	}
	addr := net.JoinHostPort(pod.Status.PodIP, "8080")
	pid, err := localcluster.ContainerPID(ctx, suite.cs, ns, pod.Name, "app")
	if err != nil {
		t.Fatal(err)
	}
	freezer := containerFreezerState(t, pid)
	node := pod.Spec.NodeName

	t0 := time.Now()
	if err := suite.cluster.NodeStop(ctx, node); err != nil {
		t.Fatal(err)
	}
	stopped := true
	t.Cleanup(func() {
		if stopped {
			_ = suite.cluster.NodeStart(ctx, node)
		}
	})
	if st := kubeletState(t, node); st == "running" {
		t.Fatalf("kubelet %s after node-stop", st)
	}
	if b, err := os.ReadFile(freezer); err != nil || strings.TrimSpace(string(b)) != "FROZEN" {
		t.Fatalf("the container's freezer state %q (%v), want FROZEN", b, err)
	}
	wantDropped(t, addr, "node stopped")
	// The control plane lives on: only the node died (the API server listens on the
	// bridge's address, which the dropped subnet holds).
	apiCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	_, err = suite.cs.CoreV1().Nodes().Get(apiCtx, localcluster.RealNodeName, metav1.GetOptions{})
	cancel()
	if err != nil {
		t.Fatalf("the API server while the node is stopped: %v", err)
	}

	if err := suite.cluster.NodeStart(ctx, node); err != nil {
		t.Fatal(err)
	}
	stopped = false
	if b, err := os.ReadFile(freezer); err != nil || strings.TrimSpace(string(b)) != "THAWED" {
		t.Fatalf("the container's freezer state %q (%v), want THAWED", b, err)
	}
	if _, err := dial(addr); err != nil {
		t.Fatalf("after node-start: %v", err)
	}
	testutil.Eventually(t, time.Minute, "node "+node+" Ready, its lease renewed after node-start", func() error {
		lease, err := suite.cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if lease.Spec.RenewTime == nil || lease.Spec.RenewTime.Before(&metav1.MicroTime{Time: t0}) {
			return fmt.Errorf("lease renewed at %v", lease.Spec.RenewTime)
		}
		out, err := kubectl(ctx, "get", "node", node, "-o", "jsonpath={.status.conditions[?(@.type=='Ready')].status}")
		if err != nil || strings.TrimSpace(out) != "True" {
			return fmt.Errorf("Ready %q (%w)", out, err)
		}
		return nil
	})
	waitApp(t, ns, "sleeper", metav1.ConditionTrue, time.Minute)
	t.Logf("node stopped and started again, Ready within %s", time.Since(t0).Round(100*time.Millisecond))
}

// containerFreezerState is the freezer.state file of the cgroup the process is in.
func containerFreezerState(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if parts := strings.SplitN(line, ":", 3); len(parts) == 3 && parts[1] == "freezer" {
			return filepath.Join("/sys/fs/cgroup/freezer", parts[2], "freezer.state")
		}
	}
	t.Fatalf("process %d is in no freezer cgroup:\n%s", pid, b)
	return ""
}

// kubeletState is the state of a node's kubelet as the cluster's supervisor reports it
// (the first node's is "kubelet", another's "kubelet-<node>").
func kubeletState(t *testing.T, node string) string {
	t.Helper()
	for _, c := range suite.cluster.Supervisor().Status() {
		if c.Name == "kubelet" && node == localcluster.RealNodeName || c.Name == "kubelet-"+node {
			return c.State
		}
	}
	t.Fatal("no kubelet among the cluster's components")
	return ""
}
