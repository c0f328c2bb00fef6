package real

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/internal/localcluster"
	"github.com/mooringhq/mooring/internal/testutil"
)

// Where pods run, on the tier's two real nodes: spread, cross-node traffic, drains, the
// loss of a node, and volumes that belong to a node.

// secondNode is the tier's other real node, the one the node-loss tests stop (the
// first keeps the API server's address and, usually, the operator's leader).
var secondNode = localcluster.RealNodeNames(2)[1]

// podNodes maps each live pod of the selector to its node.
func podNodes(t *testing.T, ns, selector string) map[string]string {
	t.Helper()
	pods, err := suite.cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	nodes := map[string]string{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			nodes[p.Name] = p.Spec.NodeName
		}
	}
	return nodes
}

// wantOnePerNode waits until the selector's pods run one on each real node.
func wantOnePerNode(t *testing.T, ns, selector string) map[string]string {
	t.Helper()
	var nodes map[string]string
	testutil.Eventually(t, time.Minute, "the pods of "+selector+" one on each of "+strings.Join(suite.cluster.RealNodes(), ", "), func() error {
		nodes = podNodes(t, ns, selector)
		var on []string
		for _, n := range nodes {
			on = append(on, n)
		}
		slices.Sort(on)
		if !slices.Equal(on, suite.cluster.RealNodes()) {
			return fmt.Errorf("pods on %v", nodes)
		}
		return nil
	})
	return nodes
}

// pinned is a client pod on the given node (by the scheduler, through its hostname label).
func pinned(ns, name, node, script string) *corev1.Pod {
	p := clientPod(ns, name, busybox, script, nil)
	p.Spec.NodeSelector = map[string]string{corev1.LabelHostname: node}
	return p
}

// TestTwoRealNodes: both real nodes are Ready on containerd, each at its own address,
// and pods on one reach pods on the other, by address (TCP) and by Service name (DNS,
// from CoreDNS on the first node's address).
func TestTwoRealNodes(t *testing.T) {
	t.Parallel()
	out := mustKubectl(t, "get", "nodes", "-l", "type=real", "-o", "wide", "--no-headers")
	for i, name := range suite.cluster.RealNodes() {
		line := ""
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, name+" ") {
				line = l
			}
		}
		ip := fmt.Sprintf("10.88.%d.1", i)
		if f := strings.Fields(line); len(f) < 6 || f[1] != "Ready" || f[5] != ip || !strings.Contains(line, "containerd://") {
			t.Errorf("node %s in kubectl get nodes -o wide: %q; want Ready, InternalIP %s, runtime containerd", name, line, ip)
		}
	}

	ns := newNamespace(t, "cross-node")
	createApp(t, webApp(ns, "web", 2))
	waitApp(t, ns, "web", metav1.ConditionTrue, 3*time.Minute)
	waitServiceAnswers(t, ns, "web", 8080)
	// The scheduler's default spread puts the two replicas on the two nodes.
	nodes := wantOnePerNode(t, ns, "app.kubernetes.io/instance=web")
	for pod, node := range nodes {
		p, err := suite.cs.CoreV1().Pods(ns).Get(context.Background(), pod, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// A client on every node but the pod's: TCP to the pod's address, and the
		// Service by name.
		for _, from := range suite.cluster.RealNodes() {
			if from == node {
				continue
			}
			name := "from-" + from + "-to-" + pod[len(pod)-5:]
			script := `wget -q -T 5 -O /dev/null http://` + net.JoinHostPort(p.Status.PodIP, "8080") + `/ && echo TCP-OK;` +
				`nslookup web.` + ns + `.svc.cluster.local && wget -q -T 5 -O /dev/null http://web.` + ns + `.svc:8080/ && echo DNS-OK`
			if _, err := suite.cs.CoreV1().Pods(ns).Create(context.Background(), pinned(ns, name, from, script), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			phase := waitPodDone(t, ns, name, 2*time.Minute)
			logs := mustKubectl(t, "-n", ns, "logs", name)
			if phase != corev1.PodSucceeded || !strings.Contains(logs, "TCP-OK") || !strings.Contains(logs, "DNS-OK") {
				t.Errorf("a pod on %s to the pod %s (%s) on %s: %s; log:\n%s", from, pod, p.Status.PodIP, node, phase, logs)
			}
		}
	}
}

// TestCacheInstanceSpreads: a CacheInstance of two replicas runs one on each node.
func TestCacheInstanceSpreads(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, "cache-spread")
	c := &mooringv1.CacheInstance{
		ObjectMeta: metav1.ObjectMeta{Name: "spread", Namespace: ns},
		Spec:       mooringv1.CacheInstanceSpec{Engine: "memcached", Version: "1.6", Replicas: ptr.To[int32](2), MemoryMB: ptr.To[int32](64)},
	}
	if err := suite.c.Create(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 3*time.Minute, "CacheInstance spread Running", func() error {
		if err := suite.c.Get(context.Background(), client.ObjectKeyFromObject(c), c); err != nil {
			return err
		}
		if c.Status.Phase != "Running" {
			return fmt.Errorf("phase %q", c.Status.Phase)
		}
		return nil
	})
	wantOnePerNode(t, ns, "app.kubernetes.io/instance=spread")
}

// TestVolumeBelongsToItsNode: a claim is provisioned on the node of its first pod (the
// PV's node affinity), and a pod of that claim cannot run on another node: it stays
// Pending, and the scheduler says why.
func TestVolumeBelongsToItsNode(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := newNamespace(t, "node-volume")
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Mi")}}},
	}
	if _, err := suite.cs.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Not bound before a pod uses it: the class waits for the first consumer.
	if live, err := suite.cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data", metav1.GetOptions{}); err != nil || live.Spec.VolumeName != "" {
		t.Fatalf("the claim before any pod: %v, volume %q; want it unbound", err, live.Spec.VolumeName)
	}
	withClaim := func(name, node string) *corev1.Pod {
		p := pinned(ns, name, node, "echo written > /data/file && cat /data/file")
		p.Spec.SecurityContext.FSGroup = ptr.To[int64](65534)
		p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
		p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
		return p
	}
	if _, err := suite.cs.CoreV1().Pods(ns).Create(ctx, withClaim("first", secondNode), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if phase := waitPodDone(t, ns, "first", 2*time.Minute); phase != corev1.PodSucceeded {
		t.Fatalf("the claim's first pod ended %s; log:\n%s", phase, mustKubectl(t, "-n", ns, "logs", "first"))
	}
	live, err := suite.cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pv, err := suite.cs.CoreV1().PersistentVolumes().Get(ctx, live.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := volumeNodes(pv); !slices.Equal(got, []string{secondNode}) || pv.Spec.Local == nil {
		t.Fatalf("PV %s: local %v, node affinity %v; want a local volume of %s, its first pod's node", pv.Name, pv.Spec.Local, got, secondNode)
	}

	if _, err := suite.cs.CoreV1().Pods(ns).Create(ctx, withClaim("elsewhere", localcluster.RealNodeName), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, time.Minute, "the pod on another node Pending, unschedulable for the volume's node", func() error {
		p, err := suite.cs.CoreV1().Pods(ns).Get(ctx, "elsewhere", metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && strings.Contains(c.Message, "didn't match PersistentVolume's node affinity") {
				return nil
			}
		}
		return fmt.Errorf("phase %s, node %q, conditions %+v", p.Status.Phase, p.Spec.NodeName, p.Status.Conditions)
	})
}

// volumeNodes are the hostnames a PV's node affinity allows.
func volumeNodes(pv *corev1.PersistentVolume) []string {
	if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return nil
	}
	var nodes []string
	for _, term := range pv.Spec.NodeAffinity.Required.NodeSelectorTerms {
		for _, e := range term.MatchExpressions {
			if e.Key == corev1.LabelHostname {
				nodes = append(nodes, e.Values...)
			}
		}
	}
	return nodes
}

// poller starts a client pod polling url every 100 ms, one line per request, and waits
// for its first answers.
func poller(t *testing.T, ns, node, url string) {
	t.Helper()
	// A request dropped by a drain is refused or reset, or finds no host, at once; the
	// timeout is generous for a busy machine. A failure's line carries wget's words.
	script := `while true; do if e=$(wget -q -T 10 -O /dev/null ` + url + ` 2>&1); then echo ok; else echo "FAIL $e"; fi; sleep 0.1; done`
	if _, err := suite.cs.CoreV1().Pods(ns).Create(context.Background(), pinned(ns, "poller", node, script), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, time.Minute, "the poller's first answers", func() error {
		out, _ := kubectl(context.Background(), "-n", ns, "logs", "poller")
		if strings.Count(out, "ok") < 5 {
			return fmt.Errorf("poller log so far: %q", out)
		}
		return nil
	})
}

// pollerFailures returns the poller's failed requests and its number of requests.
func pollerFailures(t *testing.T, ns string) ([]string, int) {
	t.Helper()
	logs := mustKubectl(t, "-n", ns, "logs", "poller")
	var failed []string
	for _, l := range strings.Split(logs, "\n") {
		if strings.HasPrefix(l, "FAIL") {
			failed = append(failed, l)
		}
	}
	return failed, strings.Count(logs, "\n")
}

// TestDrainKeepsServingAndHonoursPDB: a highly available App runs one pod per node;
// `kubectl drain` of one node moves its pod to the other while a client polling through
// the Service every 100 ms sees no failed request; a drain of the other node then stops
// at the PodDisruptionBudget Mooring made: one replica keeps running, and the drain says
// why.
func TestDrainKeepsServingAndHonoursPDB(t *testing.T) {
	// Not parallel: cordoned nodes disturb every other test's pods.
	ns := newNamespace(t, "drain")
	app := webApp(ns, "steady", 2)
	app.Spec.HighAvailability = ptr.To(true)
	createApp(t, app)
	waitApp(t, ns, "steady", metav1.ConditionTrue, 3*time.Minute)
	if _, err := suite.cs.PolicyV1().PodDisruptionBudgets(ns).Get(context.Background(), "steady", metav1.GetOptions{}); err != nil {
		t.Fatalf("Mooring made no PodDisruptionBudget for a 2-replica App: %v", err)
	}
	selector := "app.kubernetes.io/instance=steady"
	wantOnePerNode(t, ns, selector)
	waitServiceAnswers(t, ns, "steady", 8080)
	// The poller runs on the node that stays; the drain evicts the App's pods only.
	first, second := localcluster.RealNodeName, secondNode
	poller(t, ns, second, "http://steady."+ns+".svc:8080/")
	t.Cleanup(func() { mustKubectl(t, "uncordon", first, second) })

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	t0 := time.Now()
	if out, err := kubectl(ctx, "drain", first, "--pod-selector="+selector, "--timeout=2m"); err != nil {
		t.Fatalf("kubectl drain %s: %v\n%s", first, err, out)
	}
	waitApp(t, ns, "steady", metav1.ConditionTrue, 2*time.Minute)
	testutil.Eventually(t, time.Minute, "both replicas on "+second, func() error {
		nodes := podNodes(t, ns, selector)
		if len(nodes) != 2 {
			return fmt.Errorf("pods %v", nodes)
		}
		for p, n := range nodes {
			if n != second {
				return fmt.Errorf("pod %s on %s", p, n)
			}
		}
		return nil
	})
	if failed, n := pollerFailures(t, ns); len(failed) > 0 {
		t.Fatalf("%d of %d requests failed during the drain of %s:\n%s", len(failed), n, first, strings.Join(failed, "\n"))
	}
	t.Logf("drained %s in %s: both replicas on %s, no failed request", first, time.Since(t0).Round(100*time.Millisecond), second)

	// Now every replica is on the second node, and nowhere else to go: the budget lets
	// one go, never both.
	out, err := kubectl(ctx, "drain", second, "--pod-selector="+selector, "--timeout=20s")
	if err == nil {
		t.Fatalf("kubectl drain evicted both replicas of a 2-replica App with a PDB:\n%s", out)
	}
	if !strings.Contains(out, "disruption budget") {
		t.Fatalf("kubectl drain failed without naming the disruption budget: %v\n%s", err, out)
	}
	running := 0
	pods, _ := suite.cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			running++
		}
	}
	if running < 1 {
		t.Fatalf("no replica of steady runs after the drains")
	}
	if failed, n := pollerFailures(t, ns); len(failed) > 0 {
		t.Fatalf("%d of %d requests failed while the second drain was held by the budget:\n%s", len(failed), n, strings.Join(failed, "\n"))
	}
}

// TestNodeLossKeepsServing: node-stop of a node makes it NotReady, its App pod leaves
// the Service's endpoints, and the App keeps serving from the other node; node-start
// brings the node back Ready. Both times are logged (docs/real-node.md).
func TestNodeLossKeepsServing(t *testing.T) {
	// Not parallel: a stopped node stops every other test's pods on it.
	ctx := context.Background()
	ns := newNamespace(t, "node-loss")
	app := webApp(ns, "survivor", 2)
	app.Spec.HighAvailability = ptr.To(true)
	createApp(t, app)
	waitApp(t, ns, "survivor", metav1.ConditionTrue, 3*time.Minute)
	nodes := wantOnePerNode(t, ns, "app.kubernetes.io/instance=survivor")
	waitServiceAnswers(t, ns, "survivor", 8080)
	var livePod string
	for p, n := range nodes {
		if n != secondNode {
			livePod = p
		}
	}
	svc, err := suite.cs.CoreV1().Services(ns).Get(ctx, "survivor", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + net.JoinHostPort(svc.Spec.ClusterIP, "8080") + "/"

	t0 := time.Now()
	if err := suite.cluster.NodeStop(ctx, secondNode); err != nil {
		t.Fatal(err)
	}
	stopped := true
	t.Cleanup(func() {
		if stopped {
			_ = suite.cluster.NodeStart(ctx, secondNode)
		}
	})
	testutil.Eventually(t, 2*time.Minute, "node "+secondNode+" NotReady", func() error {
		if s := nodeReady(t, secondNode); s == "True" {
			return fmt.Errorf("Ready %s", s)
		}
		return nil
	})
	notReady := time.Since(t0)
	testutil.Eventually(t, 2*time.Minute, "the Service's endpoints to hold only "+livePod, func() error {
		ready, err := readyEndpoints(ctx, ns, "survivor")
		if err != nil {
			return err
		}
		if !slices.Equal(ready, []string{livePod}) {
			return fmt.Errorf("ready endpoints %v", ready)
		}
		return nil
	})
	onlyLive := time.Since(t0)
	// From here every request is answered, by the pod on the live node.
	client := &http.Client{Timeout: 5 * time.Second}
	for i := range 20 {
		resp, err := client.Get(url)
		if err != nil {
			t.Fatalf("request %d through the Service with %s stopped: %v", i, secondNode, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("request %d through the Service with %s stopped: %s", i, secondNode, resp.Status)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("node-stop of %s: NotReady after %s, the Service's endpoints only the live node's pod after %s; 20 requests answered",
		secondNode, notReady.Round(100*time.Millisecond), onlyLive.Round(100*time.Millisecond))

	t1 := time.Now()
	if err := suite.cluster.NodeStart(ctx, secondNode); err != nil {
		t.Fatal(err)
	}
	stopped = false
	testutil.Eventually(t, 2*time.Minute, "node "+secondNode+" Ready after node-start", func() error {
		if s := nodeReady(t, secondNode); s != "True" {
			return fmt.Errorf("Ready %s", s)
		}
		return nil
	})
	t.Logf("node-start of %s: Ready after %s", secondNode, time.Since(t1).Round(100*time.Millisecond))
	waitApp(t, ns, "survivor", metav1.ConditionTrue, 2*time.Minute)
	testutil.Eventually(t, 2*time.Minute, "both pods in the Service's endpoints again", func() error {
		ready, err := readyEndpoints(ctx, ns, "survivor")
		if err != nil || len(ready) != 2 {
			return fmt.Errorf("ready endpoints %v (%w)", ready, err)
		}
		return nil
	})
	waitOperatorAvailable(t)
}

// nodeReady is the status of a node's Ready condition.
func nodeReady(t *testing.T, name string) string {
	t.Helper()
	node, err := suite.cs.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return string(c.Status)
		}
	}
	return "missing"
}

// readyEndpoints are the pods a Service's EndpointSlices hold as ready, sorted.
func readyEndpoints(ctx context.Context, ns, service string) ([]string, error) {
	list, err := suite.cs.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + service})
	if err != nil {
		return nil, err
	}
	var pods []string
	for _, s := range list.Items {
		for _, e := range s.Endpoints {
			if e.TargetRef != nil && ptr.Deref(e.Conditions.Ready, false) {
				pods = append(pods, e.TargetRef.Name)
			}
		}
	}
	slices.Sort(pods)
	return pods, nil
}

// waitOperatorAvailable waits until both of the chart's operator pods are available
// again (one may have run on a stopped node), so the tests after this one find its
// webhooks answering at every endpoint.
func waitOperatorAvailable(t *testing.T) {
	t.Helper()
	testutil.Eventually(t, 2*time.Minute, "the operator's two replicas available", func() error {
		d, err := suite.cs.AppsV1().Deployments(releaseNS).Get(context.Background(), "mooring-controller-manager", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if d.Status.AvailableReplicas != 2 {
			return fmt.Errorf("%d available", d.Status.AvailableReplicas)
		}
		return nil
	})
}

// TestFaultOnMissingNodeChangesNothing: a node fault naming a node the cluster does not
// have says which it has, and changes nothing: no fault rule, every kubelet running.
func TestFaultOnMissingNodeChangesNothing(t *testing.T) {
	// Not parallel: a partition of another test would change the fault rules.
	ctx := context.Background()
	before := faultRules(t)
	for _, fault := range []func(context.Context, string) error{suite.cluster.NodeStop, suite.cluster.NodeStart} {
		err := fault(ctx, "mooring-real-9")
		if err == nil || !strings.Contains(err.Error(), `no real node "mooring-real-9"`) || !strings.Contains(err.Error(), strings.Join(suite.cluster.RealNodes(), ", ")) {
			t.Errorf("a fault on mooring-real-9: %v; want refused naming the real nodes", err)
		}
	}
	if after := faultRules(t); after != before {
		t.Errorf("the refused faults changed the fault rules:\nbefore %s\nafter %s", before, after)
	}
	for _, c := range suite.cluster.Supervisor().Status() {
		if strings.HasPrefix(c.Name, "kubelet") && c.State != "running" {
			t.Errorf("%s %s after the refused faults", c.Name, c.State)
		}
	}
}

// faultRules lists the fault chain's rules.
func faultRules(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("iptables", "-w", "-S", "MOORING-FAULTS").CombinedOutput()
	if err != nil {
		t.Fatalf("iptables -S MOORING-FAULTS: %v: %s", err, out)
	}
	return string(out)
}
