package faults

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/internal/engine"
	"github.com/mooringhq/mooring/internal/localcluster"
	"github.com/mooringhq/mooring/internal/testutil"
)

// Pods that cannot start (kwok Stages that report an image that cannot be pulled, or a
// container that crashes) show in the App's and the CacheInstance's phase and Ready
// condition with the kubelet's reason and message; fixing the image recovers them.
func TestPodFailuresAreReported(t *testing.T) {
	suite.EnsureOperator(t)
	ns := suite.Namespace(t, "podfailures")
	suite.Apply(t, ns, fmt.Sprintf("apiVersion: mooring.dev/v1\nkind: App\nmetadata:\n  name: web\nspec:\n  image: %s\n", localcluster.UnpullableImage))
	suite.Apply(t, ns, fmt.Sprintf("apiVersion: mooring.dev/v1\nkind: CacheInstance\nmetadata:\n  name: sessions\nspec:\n  image: %s\n", localcluster.CrashingImage))

	app, cache := client.ObjectKey{Namespace: ns, Name: "web"}, client.ObjectKey{Namespace: ns, Name: "sessions"}
	t0 := time.Now()
	waitReady(t, app, &mooringv1.App{}, "Pending", "ImagePullBackOff", "Back-off pulling image "+localcluster.UnpullableImage)
	waitReady(t, cache, &mooringv1.CacheInstance{}, "Pending", "CrashLoopBackOff", "back-off 40s restarting failed container=memcached")
	t.Logf("failures reported %s after creation", time.Since(t0).Round(100*time.Millisecond))

	t0 = time.Now()
	suite.MustRun(t, "patch", "-n", ns, "app/web", "--type=merge", "-p", `{"spec":{"image":"nginx:1.27"}}`)
	suite.MustRun(t, "patch", "-n", ns, "cacheinstance/sessions", "--type=json", "-p", `[{"op":"remove","path":"/spec/image"}]`)
	waitReady(t, app, &mooringv1.App{}, "Running", "AllReplicasAvailable", "1 of 1 replicas available")
	waitReady(t, cache, &mooringv1.CacheInstance{}, "Running", "AllReplicasAvailable", "1 of 1 replicas available")
	t.Logf("recovered %s after the images were fixed", time.Since(t0).Round(100*time.Millisecond))
}

// waitReady waits for obj's phase and a Ready condition with the reason and a message
// containing message.
func waitReady[T engine.Object](t *testing.T, key client.ObjectKey, obj T, phase, reason, message string) {
	t.Helper()
	testutil.Eventually(t, 2*time.Minute, fmt.Sprintf("%s phase %s, Ready reason %s", key.Name, phase, reason), func() error {
		if err := suite.Client.Get(ctx, key, obj); err != nil {
			return err
		}
		got := phaseOf(obj)
		c := meta.FindStatusCondition(*obj.StatusConditions(), mooringv1.ConditionReady)
		if got != phase || c == nil || c.Reason != reason || !strings.Contains(c.Message, message) {
			return fmt.Errorf("phase %q, Ready %+v", got, c)
		}
		return nil
	})
}

func phaseOf(o any) string {
	switch x := o.(type) {
	case *mooringv1.App:
		return string(x.Status.Phase)
	case *mooringv1.CacheInstance:
		return string(x.Status.Phase)
	}
	return ""
}
