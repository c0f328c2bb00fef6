package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mooringhq/mooring/internal/testutil"
)

// rollout is how long a real rollout on kwok nodes may take on a busy 2-core machine.
const rollout = 2 * time.Minute

func TestSampleAppRunsAndIsExplained(t *testing.T) {
	ns := suite.Namespace(t, "sample")
	sample, err := os.ReadFile(filepath.Join(suite.Root, "config", "samples", "mooring_v1_app.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	suite.Apply(t, ns, string(sample))
	suite.WaitField(t, rollout, ns, "app/hello", ".status.phase", "Running")
	suite.WaitField(t, rollout, ns, "app/hello", ".status.availableReplicas", "2")
	suite.WaitField(t, rollout, ns, "deployment/hello", ".status.availableReplicas", "2")

	out := suite.MustRun(t, "get", "apps", "-n", ns)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if got := strings.Join(strings.Fields(lines[0]), " "); got != "NAME IMAGE REPLICAS AVAILABLE PHASE AGE" {
		t.Errorf("kubectl get apps columns = %q", got)
	}
	if got := strings.Fields(lines[1]); len(got) < 5 || got[0] != "hello" || got[2] != "2" || got[3] != "2" || got[4] != "Running" {
		t.Errorf("kubectl get apps row = %v, want hello ... 2 2 Running", got)
	}
	explain := suite.MustRun(t, "explain", "app.spec")
	for _, field := range []string{"image", "replicas", "config", "port", "env", "resources"} {
		if !strings.Contains(explain, field) {
			t.Errorf("kubectl explain app.spec does not describe %s:\n%s", field, explain)
		}
	}
}

const webApp = `apiVersion: mooring.dev/v1
kind: App
metadata:
  name: web
spec:
  image: nginx:1.27
  replicas: 2
  port: 8080
  config: "mode=blue"
`

func TestScaleImageRepairAndDelete(t *testing.T) {
	ns := suite.Namespace(t, "lifecycle")
	suite.Apply(t, ns, webApp)
	suite.WaitField(t, rollout, ns, "app/web", ".status.phase", "Running")

	// kubectl scale goes through the scale subresource.
	suite.MustRun(t, "scale", "-n", ns, "app/web", "--replicas=3")
	suite.WaitField(t, rollout, ns, "deployment/web", ".spec.replicas", "3")
	suite.WaitField(t, rollout, ns, "app/web", ".status.availableReplicas", "3")
	suite.WaitField(t, rollout, ns, "app/web", ".status.phase", "Running")

	// An image change rolls out a new ReplicaSet.
	suite.MustRun(t, "patch", "-n", ns, "app/web", "--type=merge", "-p", `{"spec":{"image":"nginx:1.28"}}`)
	testutil.Eventually(t, rollout, "a ReplicaSet with nginx:1.28 fully available", func() error {
		out, err := suite.Run("get", "rs", "-n", ns, "-l", "app.kubernetes.io/instance=web",
			"-o", `jsonpath={range .items[*]}{.spec.template.spec.containers[0].image}={.status.availableReplicas}{"\n"}{end}`)
		if err != nil {
			return err
		}
		if !strings.Contains(out, "nginx:1.28=3") || strings.Count(strings.TrimSpace(out), "\n") < 1 {
			return fmt.Errorf("replica sets (image=available): %q", out)
		}
		return nil
	})
	suite.WaitField(t, rollout, ns, "app/web", ".status.phase", "Running")

	// A hand edit of a managed field is put back; a deleted Service comes back.
	suite.MustRun(t, "patch", "-n", ns, "deployment/web", "--type=merge", "-p", `{"spec":{"replicas":7}}`)
	suite.WaitField(t, rollout, ns, "deployment/web", ".spec.replicas", "3")
	uid := suite.MustRun(t, "get", "-n", ns, "service/web", "-o", "jsonpath={.metadata.uid}")
	suite.MustRun(t, "delete", "-n", ns, "service/web")
	testutil.Eventually(t, time.Minute, "Service web re-created", func() error {
		got, err := suite.JSONPath(ns, "service/web", ".metadata.uid")
		if err != nil {
			return err
		}
		if got == uid || got == "" {
			return fmt.Errorf("uid %q (old %q)", got, uid)
		}
		return nil
	})

	// Deleting the App removes everything through the garbage collector.
	suite.MustRun(t, "delete", "-n", ns, "app/web", "--wait=true")
	testutil.Eventually(t, rollout, "every child of App web gone", func() error {
		out, err := suite.Run("get", "deployments,replicasets,pods,services,configmaps", "-n", ns,
			"-l", "app.kubernetes.io/instance=web", "-o", "name")
		if err != nil {
			return err
		}
		cm, _ := suite.Run("get", "configmap", "web-config", "-n", ns, "-o", "name", "--ignore-not-found")
		if left := strings.TrimSpace(out + cm); left != "" {
			return fmt.Errorf("still there: %s", strings.ReplaceAll(left, "\n", ", "))
		}
		return nil
	})
}
