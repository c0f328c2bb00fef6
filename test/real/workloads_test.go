package real

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/api/v1beta1"
	"github.com/mooringhq/mooring/internal/localcluster"
	"github.com/mooringhq/mooring/internal/testutil"
)

// webImage is the App sample's web server: a stand-in built from Debian's nginx
// (internal/nodeimage) under the image's name, since no registry is reachable.
const webImage = "nginxinc/nginx-unprivileged:1.26"

// busybox runs the client pods.
const busybox = "docker.io/library/busybox:1.37"

// newNamespace creates a namespace for one test.
func newNamespace(t *testing.T, name string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := suite.cs.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return name
}

// clientPod is a pod running script under sh in image, restricted like Mooring's own
// workloads.
func clientPod(ns, name, image, script string, env []corev1.EnvVar) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65534),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name: "client", Image: image, Command: []string{"sh", "-c", script}, Env: env,
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: ptr.To(false),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
			}},
		},
	}
}

// dbClient is a client pod in the database engine's own image, which has its client.
func dbClient(ns, name string, e dbEngine, script string, env []corev1.EnvVar) *corev1.Pod {
	return clientPod(ns, name, "docker.io/library/"+map[v1beta1.DatabaseEngine]string{
		v1beta1.PostgreSQL: "postgres", v1beta1.MariaDB: "mariadb"}[e.engine]+":"+e.version, script, env)
}

// startClient starts a busybox client pod running script and returns its name.
func startClient(t *testing.T, ns, name, script string) string {
	t.Helper()
	if _, err := suite.cs.CoreV1().Pods(ns).Create(context.Background(), clientPod(ns, name, busybox, script, nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return name
}

// runClient runs script in a client pod to its end and returns its log; a script that
// fails fails the test with the log.
func runClient(t *testing.T, ns, name, script string) string {
	t.Helper()
	startClient(t, ns, name, script)
	phase := waitPodDone(t, ns, name, 2*time.Minute)
	logs := mustKubectl(t, "-n", ns, "logs", name)
	if phase != corev1.PodSucceeded {
		t.Fatalf("client %s ended %s, want Succeeded; log:\n%s", name, phase, logs)
	}
	return logs
}

// waitServiceAnswers waits until ns/name resolves through the cluster's DNS Service and
// its address accepts a TCP connection on port from this machine. A workload reports
// ready before CoreDNS and kube-proxy have seen its Service and endpoints (each watches
// the API server on its own), as on any cluster; clients started after this do not race them.
func waitServiceAnswers(t *testing.T, ns, name string, port int) {
	t.Helper()
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, net.JoinHostPort(localcluster.DNSServiceIP, "53"))
	}}
	fqdn := name + "." + ns + ".svc.cluster.local."
	testutil.Eventually(t, time.Minute, fqdn+" to resolve and accept connections on port "+strconv.Itoa(port), func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		addrs, err := r.LookupHost(ctx, fqdn)
		if err != nil {
			return err
		}
		conn, err := (&net.Dialer{Timeout: 2 * time.Second}).Dial("tcp", net.JoinHostPort(addrs[0], strconv.Itoa(port)))
		if err != nil {
			return err
		}
		return conn.Close()
	})
}

func waitPodDone(t *testing.T, ns, name string, timeout time.Duration) corev1.PodPhase {
	t.Helper()
	var phase corev1.PodPhase
	testutil.Eventually(t, timeout, "pod "+ns+"/"+name+" to end", func() error {
		p, err := suite.cs.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		phase = p.Status.Phase
		if phase != corev1.PodSucceeded && phase != corev1.PodFailed {
			return fmt.Errorf("phase %s", phase)
		}
		return nil
	})
	return phase
}

// waitApp waits until the App's Ready condition has the given status and returns the App.
func waitApp(t *testing.T, ns, name string, ready metav1.ConditionStatus, timeout time.Duration) *mooringv1.App {
	t.Helper()
	app := &mooringv1.App{}
	testutil.Eventually(t, timeout, fmt.Sprintf("App %s/%s Ready=%s", ns, name, ready), func() error {
		if err := suite.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, app); err != nil {
			return err
		}
		c := apimeta.FindStatusCondition(app.Status.Conditions, "Ready")
		if c == nil || c.Status != ready || c.ObservedGeneration != app.Generation {
			return fmt.Errorf("Ready condition %+v at generation %d", c, app.Generation)
		}
		return nil
	})
	return app
}

func createApp(t *testing.T, app *mooringv1.App) {
	t.Helper()
	if err := suite.c.Create(context.Background(), app); err != nil {
		t.Fatalf("create App %s: %v", app.Name, err)
	}
}

func webApp(ns, name string, replicas int32) *mooringv1.App {
	return &mooringv1.App{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: mooringv1.AppSpec{
			Image: webImage, Replicas: ptr.To(replicas), Port: ptr.To[int32](8080),
			HealthCheck: &mooringv1.AppHealthCheck{Path: "/"},
		},
	}
}

// TestAppServesThroughService: the App's pods answer HTTP through the App's Service,
// reached by its DNS name from another pod.
func TestAppServesThroughService(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, "serve")
	createApp(t, webApp(ns, "hello", 2))
	waitApp(t, ns, "hello", metav1.ConditionTrue, 3*time.Minute)
	waitServiceAnswers(t, ns, "hello", 8080)
	out := runClient(t, ns, "client", "wget -q -T 5 -O - http://hello."+ns+".svc:8080/")
	if !strings.Contains(out, "nginx") {
		t.Fatalf("GET http://hello.%s.svc:8080/ answered %q, want the nginx page", ns, out)
	}
}

// TestFailingHealthCheck: an App whose HTTP health check fails is not Ready, and its
// status says why.
func TestFailingHealthCheck(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, "unhealthy")
	app := webApp(ns, "broken", 1)
	app.Spec.HealthCheck.Path = "/no-such-page"
	createApp(t, app)
	testutil.Eventually(t, 3*time.Minute, "the App to say its health check fails", func() error {
		got := &mooringv1.App{}
		if err := suite.c.Get(context.Background(), client.ObjectKeyFromObject(app), got); err != nil {
			return err
		}
		c := apimeta.FindStatusCondition(got.Status.Conditions, "Ready")
		if c == nil || c.Status != metav1.ConditionFalse {
			return fmt.Errorf("Ready condition %+v, want False", c)
		}
		if c.Reason != "HealthCheckNotPassed" || !strings.Contains(c.Message, "health check") {
			return fmt.Errorf("Ready=False says %s: %q; want HealthCheckNotPassed naming the health check", c.Reason, c.Message)
		}
		return nil
	})
}

// TestRollingUpdateDropsNoRequest: a client polling through the Service while the App
// rolls to a new configuration sees no failed request.
func TestRollingUpdateDropsNoRequest(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, "rolling")
	// The availability defaults are what promises a rollout without a failed request.
	app := webApp(ns, "web", 2)
	app.Spec.HighAvailability = ptr.To(true)
	app.Spec.Config = "version=1"
	createApp(t, app)
	waitApp(t, ns, "web", metav1.ConditionTrue, 3*time.Minute)

	// The client polls for as long as the test runs and prints one line per request;
	// its log is read once every old pod is gone.
	waitServiceAnswers(t, ns, "web", 8080)
	url := "http://web." + ns + ".svc:8080/"
	// A request the rollout drops is refused or reset, or finds no host, at once; a slow
	// answer is not a drop, so the timeout is generous (make test runs four packages at
	// once on two cores). A failure's line carries wget's own words, to tell which it was.
	startClient(t, ns, "poller", `while true; do if e=$(wget -q -T 10 -O /dev/null `+url+` 2>&1); then echo ok; else echo "FAIL $e"; fi; sleep 0.1; done`)
	testutil.Eventually(t, time.Minute, "the poller's first answers", func() error {
		out, _ := kubectl(context.Background(), "-n", ns, "logs", "poller")
		if strings.Count(out, "ok") < 5 {
			return fmt.Errorf("poller log so far: %q", out)
		}
		return nil
	})
	oldPods := podNames(t, ns, "app.kubernetes.io/instance=web")
	patch := client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"config":"version=2"}}`))
	if err := suite.c.Patch(context.Background(), app, patch); err != nil {
		t.Fatal(err)
	}
	waitApp(t, ns, "web", metav1.ConditionTrue, 3*time.Minute)
	testutil.Eventually(t, 2*time.Minute, "every old pod replaced", func() error {
		now := podNames(t, ns, "app.kubernetes.io/instance=web")
		for _, p := range oldPods {
			if strings.Contains(strings.Join(now, " "), p) {
				return fmt.Errorf("old pod %s still there: %v", p, now)
			}
		}
		return nil
	})
	logs := mustKubectl(t, "-n", ns, "logs", "poller")
	if n := strings.Count(logs, "FAIL"); n > 0 {
		var failed []string
		for _, l := range strings.Split(logs, "\n") {
			if strings.HasPrefix(l, "FAIL") {
				failed = append(failed, l)
			}
		}
		t.Fatalf("%d of %d requests failed during the rollout:\n%s", n, strings.Count(logs, "\n"), strings.Join(failed, "\n"))
	}
	t.Logf("%d requests during the rollout, none failed", strings.Count(logs, "ok"))
}

func podNames(t *testing.T, ns, selector string) []string {
	t.Helper()
	pods, err := suite.cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			names = append(names, p.Name)
		}
	}
	return names
}

// TestCacheInstanceAnswers: a CacheInstance's memcached stores and returns a value for a
// client pod through its Service.
func TestCacheInstanceAnswers(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, "cache")
	c := &mooringv1.CacheInstance{
		ObjectMeta: metav1.ObjectMeta{Name: "sessions", Namespace: ns},
		Spec:       mooringv1.CacheInstanceSpec{Engine: "memcached", Version: "1.6", Replicas: ptr.To[int32](1), MemoryMB: ptr.To[int32](64)},
	}
	// This test is often the first of the parallel ones, right after the serial node
	// tests stopped and started a node: the operator's pods are available again
	// (waitOperatorAvailable) but the Service's rules may not have caught up yet, so a
	// webhook refused by connection (and only that) is tried again for a short while.
	waitOperatorAvailable(t)
	testutil.Eventually(t, 30*time.Second, "CacheInstance sessions admitted by the operator's webhook", func() error {
		err := suite.c.Create(context.Background(), c)
		if err != nil && !strings.Contains(err.Error(), "connect: connection refused") {
			t.Fatal(err)
		}
		return err
	})
	testutil.Eventually(t, 3*time.Minute, "CacheInstance sessions Running", func() error {
		if err := suite.c.Get(context.Background(), client.ObjectKeyFromObject(c), c); err != nil {
			return err
		}
		if c.Status.Phase != "Running" {
			return fmt.Errorf("phase %q", c.Status.Phase)
		}
		return nil
	})
	waitServiceAnswers(t, ns, "sessions", 11211)
	out := runClient(t, ns, "client", `printf 'set greeting 0 0 5\r\nhello\r\nget greeting\r\nquit\r\n' | nc sessions.`+ns+`.svc 11211`)
	if !strings.Contains(out, "STORED") || !strings.Contains(out, "VALUE greeting 0 5") || !strings.Contains(out, "hello") {
		t.Fatalf("memcached answered %q, want STORED and the value back", out)
	}
}

// TestKilledContainerRestarts: an App's web server killed by its PID on the machine is restarted
// by the kubelet, which the pod's status and an event show.
func TestKilledContainerRestarts(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, "restart")
	app := webApp(ns, "victim", 1)
	createApp(t, app)
	waitApp(t, ns, "victim", metav1.ConditionTrue, 3*time.Minute)
	pods, err := suite.cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=victim"})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("want one pod of App victim: %v %v", err, pods)
	}
	pod := pods.Items[0]
	if _, err := localcluster.KillContainer(context.Background(), suite.cs, ns, pod.Name, pod.Spec.Containers[0].Name); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 2*time.Minute, "the killed container restarted and ready", func() error {
		p, err := suite.cs.CoreV1().Pods(ns).Get(context.Background(), pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cs := p.Status.ContainerStatuses[0]
		if cs.RestartCount < 1 || !cs.Ready {
			return fmt.Errorf("restartCount %d ready %v", cs.RestartCount, cs.Ready)
		}
		if t := cs.LastTerminationState.Terminated; t == nil || t.ExitCode != 137 {
			return fmt.Errorf("last termination %+v, want exit code 137 (SIGKILL)", t)
		}
		return nil
	})
	waitApp(t, ns, "victim", metav1.ConditionTrue, time.Minute)
}

// TestUnusedServiceAddressFailsFast: a connection to a Service address no Service has
// fails on the machine at once, and a pod has no route out of the machine.
func TestUnusedServiceAddressFailsFast(t *testing.T) {
	t.Parallel()
	start := time.Now()
	conn, err := net.DialTimeout("tcp", "10.96.255.254:80", 5*time.Second)
	took := time.Since(start)
	if err == nil {
		_ = conn.Close()
		t.Fatal("a connection to the unused Service address 10.96.255.254:80 succeeded")
	}
	if took > time.Second || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("connecting to an unused Service address took %s and failed with %v; want a refusal within 1s", took, err)
	}
	for _, addr := range []string{"10.88.200.1:80", "10.244.0.5:80"} {
		start := time.Now()
		if _, err := net.DialTimeout("tcp", addr, 5*time.Second); err == nil || time.Since(start) > time.Second {
			t.Errorf("connecting to %s (in a pod range, no pod): %v after %s; want a failure within 1s", addr, err, time.Since(start))
		}
	}
	ns := newNamespace(t, "egress")
	out := runClient(t, ns, "client", `if wget -q -T 3 -O - http://192.0.2.1/ 2>&1; then echo REACHED; else echo blocked; fi`)
	if strings.Contains(out, "REACHED") || !strings.Contains(out, "blocked") {
		t.Fatalf("a pod reached an address outside the machine: %q", out)
	}
}
