package plugin_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/internal/testutil"
)

// pause stops the engine (it reports Paused and leaves a spec change alone); resume lets
// the change through.
func TestPauseAndResume(t *testing.T) {
	t.Parallel()
	ensureOperator(t)
	ctx := context.Background()
	ns := suite.Namespace(t, "pause")
	suite.Apply(t, ns, sample(t, "mooring_v1_app.yaml"))
	key := client.ObjectKey{Namespace: ns, Name: "hello"}
	waitDeploymentReplicas(t, ns, "hello", 2)

	out := mustRun(t, nil, "pause", "-n", ns, "app/hello")
	t.Logf("kubectl mooring pause app/hello:\n%s", out)
	if !strings.Contains(out, "app/hello paused") || !strings.Contains(out, "Paused=True (PausedByAnnotation)") {
		t.Errorf("pause printed:\n%s", out)
	}
	if out := mustRun(t, nil, "pause", "-n", ns, "app/hello", "--timeout=0"); !strings.Contains(out, "already paused") {
		t.Errorf("pausing twice printed:\n%s", out)
	}
	// A spec change while paused: once the engine has reconciled it (one more
	// "Reconciling" line for the App), nothing may have been applied.
	before := reconciles(t, ns, "hello")
	app := &mooringv1.App{}
	testutil.Update(t, suite.Client, key, app, func(a *mooringv1.App) { a.Spec.Replicas = ptr.To(int32(3)) })
	testutil.Eventually(t, testutil.DefaultTimeout, "the engine to reconcile the paused App's new spec", func() error {
		if n := reconciles(t, ns, "hello"); n <= before {
			return fmt.Errorf("%d reconciles, %d before the change", n, before)
		}
		return nil
	})
	if err := suite.Client.Get(ctx, key, app); err != nil {
		t.Fatal(err)
	}
	if app.Status.ObservedGeneration == app.Generation {
		t.Errorf("a paused App recorded observedGeneration %d", app.Generation)
	}
	if d := deployment(t, ns, "hello"); ptr.Deref(d.Spec.Replicas, 0) != 2 {
		t.Errorf("the paused App's Deployment was scaled to %d", ptr.Deref(d.Spec.Replicas, 0))
	}

	out = mustRun(t, nil, "resume", "-n", ns, "app/hello")
	if !strings.Contains(out, "app/hello resumed") || !strings.Contains(out, "condition Paused removed") {
		t.Errorf("resume printed:\n%s", out)
	}
	waitDeploymentReplicas(t, ns, "hello", 3)
	if err := suite.Client.Get(ctx, key, app); err != nil {
		t.Fatal(err)
	}
	if meta.FindStatusCondition(app.Status.Conditions, "Paused") != nil {
		t.Errorf("Paused condition still there after resume: %v", app.Status.Conditions)
	}
}

// reconcile sets an annotation that makes the engine reconcile the object once more. The
// object here is a Backup waiting for a database that does not exist: nothing else wakes
// its controller, so each reconcile of it in the operator's log is one the test asked for.
func TestReconcileRequestReconciles(t *testing.T) {
	t.Parallel()
	ensureOperator(t)
	ns := suite.Namespace(t, "reconcile")
	suite.Apply(t, ns, `apiVersion: mooring.dev/v1
kind: Backup
metadata:
  name: waiting
spec:
  databaseRef:
    name: absent
  schedule: "0 3 * * *"
`)
	waitBackupPhase(t, ns, "waiting", mooringv1.BackupPending)
	before := reconciles(t, ns, "waiting")
	if before == 0 {
		t.Fatal("no reconcile of Backup waiting in the operator's log; the test cannot count")
	}
	out := mustRun(t, nil, "reconcile", "-n", ns, "backup/waiting")
	if !strings.Contains(out, "backup/waiting reconcile requested at") {
		t.Errorf("reconcile printed:\n%s", out)
	}
	testutil.Eventually(t, testutil.DefaultTimeout, "one more reconcile of Backup waiting", func() error {
		if n := reconciles(t, ns, "waiting"); n <= before {
			return fmt.Errorf("%d reconciles, %d before the request", n, before)
		}
		return nil
	})
	t.Logf("reconciles of Backup waiting: %d before the request, %d after", before, reconciles(t, ns, "waiting"))
}

// reconciles counts controller-runtime's "Reconciling" debug lines about one object in
// the operator's log.
func reconciles(t *testing.T, ns, name string) int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(suite.StateDir, "mooring.log"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range bytes.Split(data, []byte("\n")) {
		if bytes.Contains(line, []byte(`"msg":"Reconciling"`)) &&
			bytes.Contains(line, []byte(`"namespace":"`+ns+`"`)) && bytes.Contains(line, []byte(`"name":"`+name+`"`)) {
			n++
		}
	}
	return n
}

func deployment(t *testing.T, ns, name string) *appsv1.Deployment {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := suite.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, d); err != nil {
		t.Fatal(err)
	}
	return d
}

func waitDeploymentReplicas(t *testing.T, ns, name string, n int32) {
	t.Helper()
	testutil.Eventually(t, rollout, fmt.Sprintf("Deployment %s with %d available replicas", name, n), func() error {
		d := &appsv1.Deployment{}
		if err := suite.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, d); err != nil {
			return err
		}
		if ptr.Deref(d.Spec.Replicas, 0) != n || d.Status.AvailableReplicas != n {
			return fmt.Errorf("spec.replicas %d, %d available", ptr.Deref(d.Spec.Replicas, 0), d.Status.AvailableReplicas)
		}
		return nil
	})
}
