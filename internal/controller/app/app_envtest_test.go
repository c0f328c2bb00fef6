package app_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/internal/controller/app"
	"github.com/mooringhq/mooring/internal/testutil"
)

var ctx = context.Background()

func createApp(t *testing.T, ns, name string, mutate func(*mooringv1.App)) *mooringv1.App {
	t.Helper()
	a := &mooringv1.App{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       mooringv1.AppSpec{Image: "nginx:1.27", Replicas: ptr.To[int32](2)},
	}
	if mutate != nil {
		mutate(a)
	}
	if err := env.Client.Create(ctx, a); err != nil {
		t.Fatalf("create App: %v", err)
	}
	return a
}

// updateApp changes the App as a user's kubectl edit would, retrying on conflicts.
func updateApp(t *testing.T, key types.NamespacedName, change func(*mooringv1.App)) {
	t.Helper()
	testutil.Update(t, env.Client, key, &mooringv1.App{}, change)
}

func image(d *appsv1.Deployment) string { return d.Spec.Template.Spec.Containers[0].Image }

func TestAppCreatesChildrenWithOwnerAndLabels(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	a := createApp(t, ns, "web", func(a *mooringv1.App) {
		a.Spec.Config = "greeting=hello"
		a.Spec.Port = ptr.To[int32](8080)
	})
	key := client.ObjectKeyFromObject(a)
	children := []client.Object{&appsv1.Deployment{}, &corev1.Service{}, &corev1.ConfigMap{}}
	names := []string{"web", "web", "web-config"}
	for i, child := range children {
		testutil.WaitFor(t, env.Client, types.NamespacedName{Namespace: ns, Name: names[i]}, child, fmt.Sprintf("%T %s", child, names[i]), func(c client.Object) error {
			if !metav1.IsControlledBy(c, a) {
				return fmt.Errorf("owner references %v do not name App web (uid %s) as controller", c.GetOwnerReferences(), a.UID)
			}
			for k, v := range map[string]string{mooringv1.NameLabel: "web", mooringv1.InstanceLabel: "web", mooringv1.ManagedByLabel: "mooring"} {
				if c.GetLabels()[k] != v {
					return fmt.Errorf("label %s=%q, want %q (labels %v)", k, c.GetLabels()[k], v, c.GetLabels())
				}
			}
			return nil
		})
	}
	d := &appsv1.Deployment{}
	testutil.WaitFor(t, env.Client, key, d, "Deployment spec", func(d *appsv1.Deployment) error {
		if *d.Spec.Replicas != 2 || image(d) != "nginx:1.27" {
			return fmt.Errorf("replicas %d image %s", *d.Spec.Replicas, image(d))
		}
		return nil
	})
	// Status on a fresh App: nothing available yet (envtest runs no Deployment controller).
	testutil.WaitFor(t, env.Client, key, &mooringv1.App{}, "App status Pending with selector", func(a *mooringv1.App) error {
		if a.Status.Phase != mooringv1.AppPending || a.Status.Selector == "" {
			return fmt.Errorf("phase %q selector %q", a.Status.Phase, a.Status.Selector)
		}
		return nil
	})
}

func TestAppChildrenFollowSpecChanges(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	a := createApp(t, ns, "api", nil)
	key := client.ObjectKeyFromObject(a)
	svcKey := key
	cmKey := types.NamespacedName{Namespace: ns, Name: "api-config"}
	testutil.WaitFor(t, env.Client, key, &appsv1.Deployment{}, "Deployment created", func(*appsv1.Deployment) error { return nil })

	updateApp(t, key, func(a *mooringv1.App) { a.Spec.Image = "nginx:1.28"; a.Spec.Replicas = ptr.To[int32](3) })
	testutil.WaitFor(t, env.Client, key, &appsv1.Deployment{}, "image and replicas to follow", func(d *appsv1.Deployment) error {
		if image(d) != "nginx:1.28" || *d.Spec.Replicas != 3 {
			return fmt.Errorf("image %s replicas %d", image(d), *d.Spec.Replicas)
		}
		return nil
	})

	updateApp(t, key, func(a *mooringv1.App) { a.Spec.Config = "v1" })
	testutil.WaitFor(t, env.Client, cmKey, &corev1.ConfigMap{}, "ConfigMap with the config", func(cm *corev1.ConfigMap) error {
		if cm.Data[app.ConfigKey] != "v1" {
			return fmt.Errorf("data %v", cm.Data)
		}
		return nil
	})
	var firstSum string
	testutil.WaitFor(t, env.Client, key, &appsv1.Deployment{}, "APP_CONFIG env and checksum", func(d *appsv1.Deployment) error {
		firstSum = d.Spec.Template.Annotations[mooringv1.ConfigChecksumAnnotation]
		env := d.Spec.Template.Spec.Containers[0].Env
		if firstSum == "" || len(env) == 0 || env[0].Name != app.ConfigEnvVar {
			return fmt.Errorf("checksum %q env %v", firstSum, env)
		}
		return nil
	})
	updateApp(t, key, func(a *mooringv1.App) { a.Spec.Config = "v2" })
	testutil.WaitFor(t, env.Client, key, &appsv1.Deployment{}, "checksum to change with the config", func(d *appsv1.Deployment) error {
		if sum := d.Spec.Template.Annotations[mooringv1.ConfigChecksumAnnotation]; sum == firstSum {
			return fmt.Errorf("checksum still %s", sum)
		}
		return nil
	})

	updateApp(t, key, func(a *mooringv1.App) { a.Spec.Port = ptr.To[int32](9090) })
	testutil.WaitFor(t, env.Client, svcKey, &corev1.Service{}, "Service for the port", func(s *corev1.Service) error {
		if s.Spec.Ports[0].Port != 9090 {
			return fmt.Errorf("ports %v", s.Spec.Ports)
		}
		return nil
	})

	// Removing fields removes what they produced, on the children and in the Deployment.
	updateApp(t, key, func(a *mooringv1.App) { a.Spec.Port = nil; a.Spec.Config = "" })
	testutil.WaitGone(t, env.Client, svcKey, &corev1.Service{}, "Service deleted after port unset")
	testutil.WaitGone(t, env.Client, cmKey, &corev1.ConfigMap{}, "ConfigMap deleted after config unset")
	testutil.WaitFor(t, env.Client, key, &appsv1.Deployment{}, "port, env and checksum gone from the Deployment", func(d *appsv1.Deployment) error {
		c := d.Spec.Template.Spec.Containers[0]
		if len(c.Ports) != 0 || len(c.Env) != 0 || d.Spec.Template.Annotations[mooringv1.ConfigChecksumAnnotation] != "" {
			return fmt.Errorf("ports %v env %v annotations %v", c.Ports, c.Env, d.Spec.Template.Annotations)
		}
		return nil
	})
}

func TestAppRepairsChildren(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	a := createApp(t, ns, "repair", func(a *mooringv1.App) { a.Spec.Port = ptr.To[int32](80) })
	key := client.ObjectKeyFromObject(a)
	svc := &corev1.Service{}
	testutil.WaitFor(t, env.Client, key, svc, "Service created", func(*corev1.Service) error { return nil })
	oldUID := svc.UID

	if err := env.Client.Delete(ctx, svc); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, env.Client, key, &corev1.Service{}, "deleted Service recreated", func(s *corev1.Service) error {
		if s.UID == oldUID {
			return errors.New("still the old Service")
		}
		return nil
	})

	// Someone edits a managed field by hand: the engine puts it back.
	d := &appsv1.Deployment{}
	testutil.WaitFor(t, env.Client, key, d, "Deployment", func(*appsv1.Deployment) error { return nil })
	patch := client.MergeFrom(d.DeepCopy())
	d.Spec.Replicas = ptr.To[int32](7)
	d.Spec.Template.Spec.Containers[0].Image = "evil:latest"
	if err := env.Client.Patch(ctx, d, patch, client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, env.Client, key, &appsv1.Deployment{}, "hand-edited replicas and image restored", func(d *appsv1.Deployment) error {
		if *d.Spec.Replicas != 2 || image(d) != "nginx:1.27" {
			return fmt.Errorf("replicas %d image %s", *d.Spec.Replicas, image(d))
		}
		return nil
	})
}

func TestAppStatusFollowsDeployment(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	a := createApp(t, ns, "status", nil)
	key := client.ObjectKeyFromObject(a)
	d := &appsv1.Deployment{}
	testutil.WaitFor(t, env.Client, key, d, "Deployment", func(*appsv1.Deployment) error { return nil })

	// envtest runs no Deployment controller: play its part.
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2}
	if err := env.Client.Status().Update(ctx, d); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, env.Client, key, &mooringv1.App{}, "App Running with Ready=True", func(a *mooringv1.App) error {
		ready := meta.FindStatusCondition(a.Status.Conditions, mooringv1.ConditionReady)
		prog := meta.FindStatusCondition(a.Status.Conditions, mooringv1.ConditionProgressing)
		switch {
		case a.Status.Phase != mooringv1.AppRunning || a.Status.AvailableReplicas != 2 || a.Status.Replicas != 2:
			return fmt.Errorf("phase %s available %d replicas %d", a.Status.Phase, a.Status.AvailableReplicas, a.Status.Replicas)
		case ready == nil || ready.Status != metav1.ConditionTrue || ready.Reason != mooringv1.ReasonAllReplicasAvailable:
			return fmt.Errorf("Ready %+v", ready)
		case prog == nil || prog.Status != metav1.ConditionFalse || prog.Reason != mooringv1.ReasonRolloutComplete:
			return fmt.Errorf("Progressing %+v", prog)
		case a.Status.ObservedGeneration != a.Generation:
			return fmt.Errorf("observedGeneration %d, generation %d", a.Status.ObservedGeneration, a.Generation)
		}
		return nil
	})

	// A scale-up makes the App NotReady until the Deployment catches up.
	updateApp(t, key, func(a *mooringv1.App) { a.Spec.Replicas = ptr.To[int32](3) })
	testutil.WaitFor(t, env.Client, key, &mooringv1.App{}, "App NotReady while scaling", func(a *mooringv1.App) error {
		if a.Status.Phase != mooringv1.AppNotReady || a.Status.ObservedGeneration != a.Generation {
			return fmt.Errorf("phase %s observedGeneration %d generation %d", a.Status.Phase, a.Status.ObservedGeneration, a.Generation)
		}
		return nil
	})
}

func TestInvalidAppsRejected(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	tests := map[string]struct {
		mutate    func(*mooringv1.App)
		wantField string
	}{
		"no image":       {mutate: func(a *mooringv1.App) { a.Spec.Image = "" }, wantField: "spec.image"},
		"zero replicas":  {mutate: func(a *mooringv1.App) { a.Spec.Replicas = ptr.To[int32](0) }, wantField: "spec.replicas"},
		"port too large": {mutate: func(a *mooringv1.App) { a.Spec.Port = ptr.To[int32](70000) }, wantField: "spec.port"},
		"port zero":      {mutate: func(a *mooringv1.App) { a.Spec.Port = ptr.To[int32](0) }, wantField: "spec.port"},
		"APP_CONFIG in env with config": {mutate: func(a *mooringv1.App) {
			a.Spec.Config = "x"
			a.Spec.Env = []corev1.EnvVar{{Name: "APP_CONFIG", Value: "y"}}
		}, wantField: "spec.env"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			a := &mooringv1.App{
				ObjectMeta: metav1.ObjectMeta{Name: "bad", Namespace: ns},
				Spec:       mooringv1.AppSpec{Image: "nginx", Replicas: ptr.To[int32](1)},
			}
			tt.mutate(a)
			err := env.Client.Create(ctx, a)
			if err == nil {
				_ = env.Client.Delete(ctx, a)
				t.Fatal("invalid App was accepted")
			}
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tt.wantField) {
				t.Fatalf("error %q is not an Invalid error naming %s", err, tt.wantField)
			}
		})
	}
}

func TestPausedAppIsLeftAlone(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	a := createApp(t, ns, "paused", nil)
	key := client.ObjectKeyFromObject(a)
	testutil.WaitFor(t, env.Client, key, &appsv1.Deployment{}, "Deployment", func(*appsv1.Deployment) error { return nil })

	updateApp(t, key, func(a *mooringv1.App) {
		a.Annotations = map[string]string{mooringv1.PausedAnnotation: "true"}
		a.Spec.Image = "nginx:2"
	})
	// The Paused condition carries the generation it was set for: once it names the new
	// generation, the reconcile of the image change has run, and must have changed nothing.
	testutil.WaitFor(t, env.Client, key, &mooringv1.App{}, "Paused condition for the new generation", func(a *mooringv1.App) error {
		c := meta.FindStatusCondition(a.Status.Conditions, mooringv1.ConditionPaused)
		if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != a.Generation {
			return fmt.Errorf("Paused %+v at generation %d", c, a.Generation)
		}
		return nil
	})
	d := &appsv1.Deployment{}
	if err := env.Client.Get(ctx, key, d); err != nil {
		t.Fatal(err)
	}
	if image(d) != "nginx:1.27" {
		t.Fatalf("paused App's Deployment changed: image %s", image(d))
	}

	updateApp(t, key, func(a *mooringv1.App) { delete(a.Annotations, mooringv1.PausedAnnotation) })
	testutil.WaitFor(t, env.Client, key, &appsv1.Deployment{}, "image change applied after resume", func(d *appsv1.Deployment) error {
		if image(d) != "nginx:2" {
			return fmt.Errorf("image %s", image(d))
		}
		return nil
	})
	testutil.WaitFor(t, env.Client, key, &mooringv1.App{}, "Paused condition removed", func(a *mooringv1.App) error {
		if c := meta.FindStatusCondition(a.Status.Conditions, mooringv1.ConditionPaused); c != nil {
			return fmt.Errorf("Paused %+v", c)
		}
		return nil
	})
}

// A converged App costs nothing: reconciling it again sends no write to the API server.
func TestConvergedAppReconcileMakesNoWrites(t *testing.T) {
	ns := env.Namespace(t)
	const n = 5
	for i := range n {
		createApp(t, ns, fmt.Sprintf("quiet-%d", i), func(a *mooringv1.App) {
			a.Spec.Config = "c"
			a.Spec.Port = ptr.To[int32](8080)
		})
	}
	var keys []types.NamespacedName
	for i := range n {
		keys = append(keys, types.NamespacedName{Namespace: ns, Name: fmt.Sprintf("quiet-%d", i)})
	}
	testutil.ExpectConvergedNoWrites(t, env.Client, app.Component, keys, func() *mooringv1.App { return &mooringv1.App{} },
		func(a *mooringv1.App) error {
			if a.Status.ObservedGeneration != a.Generation || a.Status.Phase == "" {
				return fmt.Errorf("observedGeneration %d generation %d phase %q", a.Status.ObservedGeneration, a.Generation, a.Status.Phase)
			}
			return nil
		})
}

// The sample a newcomer applies first shows the print columns in `kubectl get`. REPLICAS
// is the count the App wants (status.desiredReplicas): before any pod exists (envtest runs
// no Deployment controller), and while an autoscaler owns the count instead of
// spec.replicas.
func TestSampleAppShowsPrintColumns(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	sample := testutil.RepoRoot() + "/config/samples/mooring_v1_app.yaml"
	env.Kubectl(t, "apply", "-n", ns, "-f", sample)
	// spec.replicas defaults to 1; the autoscaler keeps at least minReplicas.
	createApp(t, ns, "elastic", func(a *mooringv1.App) {
		a.Spec.Replicas = nil
		a.Spec.Autoscaling = &mooringv1.AppAutoscaling{MinReplicas: ptr.To[int32](2), MaxReplicas: 5}
	})
	hello := types.NamespacedName{Namespace: ns, Name: "hello"}
	elastic := types.NamespacedName{Namespace: ns, Name: "elastic"}
	waitDesiredReplicas(t, hello, 2, "sample App (spec.replicas 2, no pods yet)")
	waitDesiredReplicas(t, elastic, 2, "autoscaled App before its HPA reports (minReplicas 2)")

	out := env.Kubectl(t, "get", "apps", "-n", ns)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 {
		t.Fatalf("kubectl get apps printed %d lines, want a header and two Apps:\n%s", len(lines), out)
	}
	if got := strings.Fields(lines[0]); strings.Join(got, " ") != "NAME IMAGE REPLICAS AVAILABLE PHASE AGE" {
		t.Errorf("columns = %v, want NAME IMAGE REPLICAS AVAILABLE PHASE AGE", got)
	}
	expectRow(t, out, "hello", "hello nginxinc/nginx-unprivileged:1.26 2 0 Pending")
	expectRow(t, out, "elastic", "elastic nginx:1.27 2 0 Pending")

	// The HPA decides on 4 pods (envtest runs no HPA controller: write its status as it would).
	testutil.Eventually(t, testutil.DefaultTimeout, "HPA status written", func() error {
		h := &autoscalingv2.HorizontalPodAutoscaler{}
		if err := env.Client.Get(ctx, elastic, h); err != nil {
			return err
		}
		h.Status = autoscalingv2.HorizontalPodAutoscalerStatus{CurrentReplicas: 1, DesiredReplicas: 4}
		return env.Client.Status().Update(ctx, h)
	})
	waitDesiredReplicas(t, elastic, 4, "autoscaled App showing its HPA's desiredReplicas")
	out = env.Kubectl(t, "get", "apps", "-n", ns)
	expectRow(t, out, "elastic", "elastic nginx:1.27 4 0 Pending")
	t.Logf("kubectl get apps:\n%s", out)
}

// waitDesiredReplicas waits until the App's status.desiredReplicas is want.
func waitDesiredReplicas(t *testing.T, key types.NamespacedName, want int32, what string) {
	t.Helper()
	testutil.WaitFor(t, env.Client, key, &mooringv1.App{}, what, func(a *mooringv1.App) error {
		if a.Status.DesiredReplicas != want {
			return fmt.Errorf("status.desiredReplicas %d (phase %q), want %d", a.Status.DesiredReplicas, a.Status.Phase, want)
		}
		return nil
	})
}

// expectRow checks the row of App name in kubectl get output, without its AGE.
func expectRow(t *testing.T, out, name, want string) {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == name {
			if got := strings.Join(f[:len(f)-1], " "); got != want {
				t.Errorf("kubectl get apps row %q, want %q <age>", line, want)
			}
			return
		}
	}
	t.Errorf("kubectl get apps shows no App %s:\n%s", name, out)
}
