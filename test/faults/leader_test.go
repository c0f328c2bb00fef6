package faults

import (
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mooringhq/mooring/internal/devenv"
	"github.com/mooringhq/mooring/internal/localcluster"
	"github.com/mooringhq/mooring/internal/testutil"
	"github.com/mooringhq/mooring/internal/testutil/clusterenv"
)

// controller-runtime's leader election defaults, which Mooring keeps: a lease lasts 15 s
// and candidates retry every 2 s. client-go jitters the retries by up to 1.2 × the period,
// so a candidate tries again within 2 s × 2.2 of a release.
const (
	leaseDuration = 15 * time.Second
	retryPeriod   = 2 * time.Second
	retryJitter   = 1.2
)

// Resources every replica writes whether it leads or not: the certificate rotator runs on
// each (it serves webhooks), and candidates take part in the election.
var everyReplicaWrites = []string{"secrets", "mutatingwebhookconfigurations", "validatingwebhookconfigurations", "customresourcedefinitions", "leases", "events"}

// Two operators with --leader-elect: one leads, and only it writes. SIGTERM hands over
// within the jittered retry period + 1 s of the leader releasing its lease; SIGKILL within
// the lease duration + two jittered retry periods. Apps created while nobody leads
// converge under the new leader.
func TestLeaderElectionHandover(t *testing.T) {
	stopOperator(t)
	ns := suite.Namespace(t, "leader")
	proxy := startWebhookProxy(t, suite.WebhookPort)
	a := startCandidate(t, proxy, "a")
	b := startCandidate(t, proxy, "b")
	leader, follower := waitLeader(t, a, b, time.Minute)

	suite.Apply(t, ns, appManifest("first", 1))
	waitAppsRunning(t, ns, 2*time.Minute, "first")
	assertOnlyLeaderWrites(t, leader, follower)

	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		// A released lease is taken at the follower's next try. A lease left by a killed
		// leader expires leaseDuration after the follower last saw it renewed, which it
		// sees only at its own tries: one jittered retry late at worst, plus the try
		// after expiry.
		retry := time.Duration(float64(retryPeriod) * (1 + retryJitter))
		bound := retry + time.Second
		if sig == syscall.SIGKILL {
			bound = leaseDuration + 2*retry
		}
		t0 := time.Now()
		if err := syscall.Kill(leader.Pid(), sig); err != nil {
			t.Fatal(err)
		}
		handover := watchHandover(follower, bound+10*time.Second)
		// Created while the old leader is going and the new one not yet leading.
		name := "during-" + map[syscall.Signal]string{syscall.SIGTERM: "sigterm", syscall.SIGKILL: "sigkill"}[sig]
		testutil.Eventually(t, 30*time.Second, "App "+name+" admitted by a remaining replica", func() error {
			_, err := suite.RunStdin(appManifest(name, 1), "apply", "-n", ns, "-f", "-")
			return err
		})
		h := <-handover
		if h.led.IsZero() {
			t.Fatalf("%s of the leader: the follower did not lead within %s", sig, bound+10*time.Second)
		}
		// After SIGTERM the leader first finishes its reconciles and releases the lease;
		// the handover is from the release on. After SIGKILL nothing is released.
		from, what := t0, "the signal"
		if !h.released.IsZero() {
			from, what = h.released, "the release of the lease ("+h.released.Sub(t0).Round(10*time.Millisecond).String()+" after the signal)"
		}
		took := h.led.Sub(from)
		t.Logf("%s of the leader: the follower leads %s after %s (bound %s)", sig, took.Round(10*time.Millisecond), what, bound)
		if took > bound {
			t.Errorf("%s handover took %s, more than %s", sig, took, bound)
		}
		waitAppsRunning(t, ns, 2*time.Minute, name)
		_ = leader.Stop() // reaps it
		if sig == syscall.SIGTERM {
			// The next round kills the new leader; a new follower stands by.
			leader, follower = follower, startCandidate(t, proxy, "c")
			assertOnlyLeaderWrites(t, leader, follower)
		}
	}
	suite.AssertOneChildEach(t, ns, &appsv1.DeploymentList{}, &corev1.ConfigMapList{})
	_ = follower.Stop()
}

// startCandidate starts an operator with --leader-elect serving its webhooks on a port of
// its own behind the proxy, with its own certificate directory (the certificate is the
// same: all replicas share the Secret).
func startCandidate(t *testing.T, proxy *webhookProxy, name string) *localcluster.Operator {
	t.Helper()
	port, err := localcluster.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	args := append(devenv.OperatorArgs(suite.StateDir, port),
		"--webhook-cert-dir", filepath.Join(suite.StateDir, "webhook-certs-"+name),
		"--leader-elect", "--leader-election-namespace="+devenv.Namespace)
	op, err := suite.StartOperatorProcess(ctx, "leader-"+name+".log", args...)
	if err != nil {
		t.Fatal(err)
	}
	proxy.add(port)
	t.Cleanup(func() { _ = op.Stop() })
	return op
}

func isLeader(op *localcluster.Operator) bool {
	m, err := clusterenv.Scrape(op.MetricsAddr)
	return err == nil && m[`leader_election_master_status{name="mooring.dev"}`] == 1
}

func waitLeader(t *testing.T, a, b *localcluster.Operator, timeout time.Duration) (leader, follower *localcluster.Operator) {
	t.Helper()
	testutil.Eventually(t, timeout, "one of two operators to lead", func() error {
		switch la, lb := isLeader(a), isLeader(b); {
		case la && lb:
			t.Fatal("both operators lead")
		case la:
			leader, follower = a, b
		case lb:
			leader, follower = b, a
		default:
			return fmt.Errorf("neither leads")
		}
		return nil
	})
	return leader, follower
}

// assertOnlyLeaderWrites checks, from mooring_api_requests_total of both processes, that
// the leader wrote and the follower wrote nothing but what every replica writes.
func assertOnlyLeaderWrites(t *testing.T, leader, follower *localcluster.Operator) {
	t.Helper()
	lm, err := clusterenv.Scrape(leader.MetricsAddr)
	if err != nil {
		t.Fatal(err)
	}
	fm, err := clusterenv.Scrape(follower.MetricsAddr)
	if err != nil {
		t.Fatal(err)
	}
	if w := clusterenv.Writes(fm, everyReplicaWrites...); len(w) > 0 {
		t.Errorf("the follower wrote: %v", w)
	}
	if w := clusterenv.Writes(lm, everyReplicaWrites...); len(w) == 0 {
		t.Errorf("the leader wrote nothing: the check proves nothing")
	} else {
		t.Logf("leader writes: %v; follower: none", w)
	}
}

// handover is when the lease was seen released (zero if never) and when the follower
// was seen leading (zero if not in time).
type handover struct{ released, led time.Time }

// watchHandover polls the lease and the follower's leader metric every 50 ms, from now
// until the follower leads or timeout passes, and delivers what it saw.
func watchHandover(follower *localcluster.Operator, timeout time.Duration) <-chan handover {
	out := make(chan handover, 1)
	go func() {
		var h handover
		deadline := time.Now().Add(timeout)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for ; time.Now().Before(deadline); <-tick.C {
			lease := &coordinationv1.Lease{}
			err := suite.Client.Get(ctx, client.ObjectKey{Namespace: devenv.Namespace, Name: "mooring.dev"}, lease)
			if err == nil && h.released.IsZero() && ptr.Deref(lease.Spec.HolderIdentity, "") == "" {
				h.released = time.Now()
			}
			if isLeader(follower) {
				h.led = time.Now()
				break
			}
		}
		out <- h
	}()
	return out
}
