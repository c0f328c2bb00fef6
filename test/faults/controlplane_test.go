package faults

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/internal/localcluster"
	"github.com/mooringhq/mooring/internal/testutil"
)

// While the operator runs, kube-apiserver and then etcd go away and come back. The
// operator stays up (same process), reports not ready during the outage and ready after
// it, its watches resume: changes made as the control plane comes back (a new App, a
// scaled one) converge, and no App has a second set of children.
func TestControlPlaneRestarts(t *testing.T) {
	suite.EnsureOperator(t)
	op := suite.Operator
	ns := suite.Namespace(t, "controlplane")
	suite.Apply(t, ns, appManifest("before", 1))
	waitAppsRunning(t, ns, 2*time.Minute, "before")

	// down is the component stopped and not yet started again. Every later test of the
	// package needs the whole control plane, so a failure while it is down must not leave
	// it down.
	down := ""
	t.Cleanup(func() {
		if down == "" {
			return
		}
		if err := suite.Cluster.StartComponent(ctx, down); err != nil {
			t.Errorf("start %s again after the test failed: %v", down, err)
		}
	})
	for i, component := range []string{localcluster.KubeAPIServer, localcluster.Etcd} {
		t0 := time.Now()
		if err := suite.Cluster.StopComponent(component); err != nil {
			t.Fatal(err)
		}
		down = component
		testutil.Eventually(t, 30*time.Second, "the operator to report not ready while "+component+" is down", func() error {
			if code := readyz(op.ReadyzURL()); code == http.StatusOK {
				return fmt.Errorf("/readyz answers %d", code)
			}
			return nil
		})
		if err := suite.Cluster.StartComponent(ctx, component); err != nil {
			t.Fatal(err)
		}
		down = ""
		// Changes made the moment the control plane is back, before the operator has
		// necessarily noticed: they reach it only through resumed watches.
		name := fmt.Sprintf("after-%s", component)
		suite.Apply(t, ns, appManifest(name, 1))
		suite.MustRun(t, "scale", "-n", ns, "app/before", fmt.Sprintf("--replicas=%d", i+2))
		testutil.Eventually(t, time.Minute, "the operator ready again", func() error {
			if code := readyz(op.ReadyzURL()); code != http.StatusOK {
				return fmt.Errorf("/readyz answers %d", code)
			}
			return nil
		})
		waitAppsRunning(t, ns, 2*time.Minute, "before", name)
		waitAvailable(t, ns, "before", int32(i+2))
		t.Logf("%s down and back: the operator converged the changes %s after the stop", component, time.Since(t0).Round(100*time.Millisecond))
		select {
		case err := <-op.Exited():
			t.Fatalf("the operator exited: %v", err)
		default:
		}
	}
	if suite.Operator != op {
		t.Fatal("the operator was restarted")
	}
	suite.AssertOneChildEach(t, ns, &appsv1.DeploymentList{}, &corev1.ConfigMapList{})
	// A restarted kube-apiserver answers before its RBAC authorizer has loaded the roles,
	// so the operator's first requests after the outage are denied ("is forbidden") until
	// it has. The package fails on any denial in a *.log (a missing rule); this log is kept
	// under another name, so these expected ones do not count.
	stopOperator(t)
	if err := os.Rename(op.LogPath, filepath.Join(suite.StateDir, "mooring-controlplane.txt")); err != nil {
		t.Fatal(err)
	}
}

// readyzClient bounds one readiness probe: while kube-apiserver or etcd is down the
// operator's /readyz may wait on it, and a probe that hangs would outlast the polls'
// deadlines.
var readyzClient = &http.Client{Timeout: 5 * time.Second}

// readyz returns the status of a GET of url, 0 when there is no answer.
func readyz(url string) int {
	resp, err := readyzClient.Get(url)
	if err != nil {
		return 0
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

// appManifest is an App with a ConfigMap, replicas pods and no Service.
func appManifest(name string, replicas int) string {
	return fmt.Sprintf("---\napiVersion: mooring.dev/v1\nkind: App\nmetadata:\n  name: %s\nspec:\n  image: nginx:1.27\n  replicas: %d\n  config: \"name=%s\"\n", name, replicas, name)
}

// waitAppsRunning waits until the named Apps are Running at their current generation.
func waitAppsRunning(t *testing.T, ns string, timeout time.Duration, names ...string) {
	t.Helper()
	testutil.Eventually(t, timeout, fmt.Sprintf("Apps %v Running", names), func() error {
		for _, n := range names {
			a := &mooringv1.App{}
			if err := suite.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: n}, a); err != nil {
				return err
			}
			if a.Status.Phase != mooringv1.AppRunning || a.Status.ObservedGeneration != a.Generation {
				return fmt.Errorf("App %s is %q at generation %d of %d", n, a.Status.Phase, a.Status.ObservedGeneration, a.Generation)
			}
		}
		return nil
	})
}

func waitAvailable(t *testing.T, ns, name string, want int32) {
	t.Helper()
	testutil.Eventually(t, time.Minute, fmt.Sprintf("App %s with %d available replicas", name, want), func() error {
		a := &mooringv1.App{}
		if err := suite.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, a); err != nil {
			return err
		}
		if a.Status.AvailableReplicas != want || a.Status.Phase != mooringv1.AppRunning {
			return fmt.Errorf("%d available, phase %s", a.Status.AvailableReplicas, a.Status.Phase)
		}
		return nil
	})
}
