package faults

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mooringhq/mooring/internal/testutil"
)

// With the operator down, the API server refuses to create or edit Mooring objects
// (failurePolicy Fail) and says that the Mooring webhook cannot be called; what already
// runs is left alone. When the operator is back, the refused change goes through and
// converges.
func TestOperatorDown(t *testing.T) {
	suite.EnsureOperator(t)
	ns := suite.Namespace(t, "down")
	suite.Apply(t, ns, appManifest("steady", 2))
	waitAppsRunning(t, ns, 2*time.Minute, "steady")
	before := &appsv1.Deployment{}
	key := client.ObjectKey{Namespace: ns, Name: "steady"}
	if err := suite.Client.Get(ctx, key, before); err != nil {
		t.Fatal(err)
	}
	stopOperator(t)

	_, createErr := suite.RunStdin(appManifest("refused", 1), "apply", "-n", ns, "-f", "-")
	_, editErr := suite.Run("patch", "-n", ns, "app/steady", "--type=merge", "-p", `{"spec":{"image":"nginx:1.28"}}`)
	for what, err := range map[string]error{"create": createErr, "edit": editErr} {
		if err == nil {
			t.Fatalf("%s with the operator down was accepted", what)
		}
		if msg := err.Error(); !strings.Contains(msg, `failed calling webhook "vapp-v1.mooring.dev"`) {
			t.Errorf("%s was refused with %q, want a message naming the Mooring webhook", what, msg)
		} else {
			t.Logf("%s refused: %s", what, msg[strings.Index(msg, "Internal error"):])
		}
	}
	// Nothing already running is disturbed: the Deployment and its pods are as they were.
	after := &appsv1.Deployment{}
	if err := suite.Client.Get(ctx, key, after); err != nil {
		t.Fatal(err)
	}
	if after.Generation != before.Generation || after.Status.AvailableReplicas != 2 {
		t.Errorf("Deployment changed while the operator was down: generation %d → %d, %d available",
			before.Generation, after.Generation, after.Status.AvailableReplicas)
	}
	pods := &corev1.PodList{}
	if err := suite.Client.List(ctx, pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
			t.Errorf("pod %s is %s (deleting: %v)", p.Name, p.Status.Phase, p.DeletionTimestamp != nil)
		}
	}

	t0 := time.Now()
	suite.EnsureOperator(t)
	testutil.Eventually(t, 30*time.Second, "the refused App admitted once the operator is back", func() error {
		_, err := suite.RunStdin(appManifest("refused", 1), "apply", "-n", ns, "-f", "-")
		return err
	})
	waitAppsRunning(t, ns, 2*time.Minute, "steady", "refused")
	t.Logf("operator back: the refused App Running %s after the restart", time.Since(t0).Round(100*time.Millisecond))
	if n := len(pods.Items); n != 2 {
		t.Errorf("%d pods of steady while the operator was down, want 2", n)
	}
}
