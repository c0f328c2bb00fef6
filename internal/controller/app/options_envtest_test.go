package app_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/api/v1beta1"
	"github.com/mooringhq/mooring/internal/controller/app"
	"github.com/mooringhq/mooring/internal/engine"
	"github.com/mooringhq/mooring/internal/testutil"
)

// replicasOwners lists the field managers that own the Deployment's spec.replicas.
func replicasOwners(d *appsv1.Deployment) []string {
	var out []string
	for _, mf := range d.ManagedFields {
		if mf.FieldsV1 != nil && strings.Contains(mf.FieldsV1.GetRawString(), `"f:replicas"`) && mf.Subresource == "" {
			out = append(out, mf.Manager)
		}
	}
	slices.Sort(out)
	return out
}

func condition(a *mooringv1.App, condType string) *metav1.Condition {
	return meta.FindStatusCondition(a.Status.Conditions, condType)
}

// While spec.autoscaling is set the HorizontalPodAutoscaler owns the Deployment's
// replicas: Mooring hands the field over without resetting it, does not fight whoever
// scales the Deployment, refuses `kubectl scale app`, and takes the field back when
// autoscaling is removed.
func TestAutoscalingHandsReplicasOver(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	a := createApp(t, ns, "scaled", nil) // 2 replicas
	key := client.ObjectKeyFromObject(a)
	testutil.WaitFor(t, env.Client, key, &appsv1.Deployment{}, "Deployment with 2 replicas owned by mooring", func(d *appsv1.Deployment) error {
		if *d.Spec.Replicas != 2 || !slices.Equal(replicasOwners(d), []string{engine.FieldOwner}) {
			return fmt.Errorf("replicas %d owned by %v", *d.Spec.Replicas, replicasOwners(d))
		}
		return nil
	})

	updateApp(t, key, func(a *mooringv1.App) {
		a.Spec.Autoscaling = &mooringv1.AppAutoscaling{MinReplicas: ptr.To[int32](2), MaxReplicas: 6}
	})
	testutil.WaitFor(t, env.Client, key, &autoscalingv2.HorizontalPodAutoscaler{}, "HorizontalPodAutoscaler", func(h *autoscalingv2.HorizontalPodAutoscaler) error {
		if h.Spec.MaxReplicas != 6 || h.Spec.ScaleTargetRef.Name != "scaled" {
			return fmt.Errorf("spec %+v", h.Spec)
		}
		return nil
	})
	testutil.WaitFor(t, env.Client, key, &appsv1.Deployment{}, "replicas handed over, value kept", func(d *appsv1.Deployment) error {
		if owners := replicasOwners(d); *d.Spec.Replicas != 2 || !slices.Equal(owners, []string{app.HandOverFieldManager}) {
			return fmt.Errorf("replicas %d owned by %v, want 2 owned by %s alone", *d.Spec.Replicas, owners, app.HandOverFieldManager)
		}
		return nil
	})

	// The autoscaler scales the Deployment (envtest runs no HPA controller: play it, with
	// an Update as the controller makes).
	d := &appsv1.Deployment{}
	if err := env.Client.Get(ctx, key, d); err != nil {
		t.Fatal(err)
	}
	scale := &autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: 5}}
	if err := env.Client.SubResource("scale").Update(ctx, d, client.WithSubResourceBody(scale), client.FieldOwner("horizontal-pod-autoscaler")); err != nil {
		t.Fatalf("scale the Deployment as the HPA would: %v", err)
	}
	// A spec change makes Mooring write the Deployment again: the autoscaler's 5 stays.
	updateApp(t, key, func(a *mooringv1.App) { a.Spec.Image = "nginx:1.28" })
	testutil.WaitFor(t, env.Client, key, &appsv1.Deployment{}, "image changed, autoscaler's replicas kept", func(d *appsv1.Deployment) error {
		if image(d) != "nginx:1.28" || *d.Spec.Replicas != 5 || slices.Contains(replicasOwners(d), engine.FieldOwner) {
			return fmt.Errorf("image %s replicas %d owners %v", image(d), *d.Spec.Replicas, replicasOwners(d))
		}
		return nil
	})
	// With the autoscaler's 5 replicas available the App is Running: it wants the
	// autoscaler's count, not spec.replicas.
	testutil.Eventually(t, testutil.DefaultTimeout, "Deployment marked available", func() error {
		d := &appsv1.Deployment{}
		if err := env.Client.Get(ctx, key, d); err != nil {
			return err
		}
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 5, UpdatedReplicas: 5, ReadyReplicas: 5, AvailableReplicas: 5}
		return env.Client.Status().Update(ctx, d)
	})
	testutil.WaitFor(t, env.Client, key, &mooringv1.App{}, "App Running with the autoscaler's count", func(a *mooringv1.App) error {
		if a.Status.Phase != mooringv1.AppRunning || a.Status.AvailableReplicas != 5 {
			return fmt.Errorf("phase %s available %d", a.Status.Phase, a.Status.AvailableReplicas)
		}
		return nil
	})

	// kubectl scale app is refused while autoscaling (the scale subresource runs the CRD's
	// validation, whose CEL rule names spec.replicas).
	current := &mooringv1.App{}
	if err := env.Client.Get(ctx, key, current); err != nil {
		t.Fatal(err)
	}
	err := env.Client.SubResource("scale").Update(ctx, current, client.WithSubResourceBody(&autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: 9}}))
	if err == nil || !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.replicas cannot change while spec.autoscaling is set") {
		t.Fatalf("scaling an autoscaled App: error %v, want Invalid naming spec.replicas", err)
	}

	// Removing autoscaling hands replicas back to spec.replicas and removes the HPA.
	updateApp(t, key, func(a *mooringv1.App) { a.Spec.Autoscaling = nil })
	testutil.WaitGone(t, env.Client, key, &autoscalingv2.HorizontalPodAutoscaler{}, "HPA pruned")
	testutil.WaitGone(t, env.Client, key, &policyv1.PodDisruptionBudget{}, "PDB pruned")
	testutil.WaitFor(t, env.Client, key, &appsv1.Deployment{}, "replicas back to spec.replicas, owned by mooring", func(d *appsv1.Deployment) error {
		if *d.Spec.Replicas != 2 || !slices.Contains(replicasOwners(d), engine.FieldOwner) {
			return fmt.Errorf("replicas %d owners %v", *d.Spec.Replicas, replicasOwners(d))
		}
		return nil
	})
	// And kubectl scale works again.
	if err := env.Client.Get(ctx, key, current); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.SubResource("scale").Update(ctx, current, client.WithSubResourceBody(&autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: 3}})); err != nil {
		t.Fatalf("scale without autoscaling: %v", err)
	}
	testutil.WaitFor(t, env.Client, key, &appsv1.Deployment{}, "scaled to 3", func(d *appsv1.Deployment) error {
		if *d.Spec.Replicas != 3 {
			return fmt.Errorf("replicas %d", *d.Spec.Replicas)
		}
		return nil
	})
}

// An HPA that cannot scale (its CPU utilization target needs a CPU request the pods do not
// have) is reported on the App, which otherwise looks Running at the count it has.
func TestAutoscalerThatCannotScaleIsReported(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	a := createApp(t, ns, "stuck", func(a *mooringv1.App) {
		a.Spec.Replicas = nil
		a.Spec.Autoscaling = &mooringv1.AppAutoscaling{MaxReplicas: 4}
	})
	key := client.ObjectKeyFromObject(a)
	testutil.WaitFor(t, env.Client, key, &mooringv1.App{}, "Autoscaling=Unknown before the HPA reports", func(a *mooringv1.App) error {
		if c := condition(a, mooringv1.ConditionAutoscaling); c == nil || c.Status != metav1.ConditionUnknown || c.Reason != mooringv1.ReasonAutoscalerPending {
			return fmt.Errorf("Autoscaling %+v, want Unknown/%s", c, mooringv1.ReasonAutoscalerPending)
		}
		return nil
	})

	// The HPA controller reports it (envtest runs none: write its status as it would).
	setHPAConditions := func(conds ...autoscalingv2.HorizontalPodAutoscalerCondition) {
		t.Helper()
		testutil.Eventually(t, testutil.DefaultTimeout, "HPA status written", func() error {
			h := &autoscalingv2.HorizontalPodAutoscaler{}
			if err := env.Client.Get(ctx, key, h); err != nil {
				return err
			}
			now := metav1.Now()
			for i := range conds {
				conds[i].LastTransitionTime = now
			}
			h.Status = autoscalingv2.HorizontalPodAutoscalerStatus{CurrentReplicas: 1, DesiredReplicas: 1, Conditions: conds}
			return env.Client.Status().Update(ctx, h)
		})
	}
	ableToScale := autoscalingv2.HorizontalPodAutoscalerCondition{Type: autoscalingv2.AbleToScale, Status: corev1.ConditionTrue, Reason: "SucceededGetScale",
		Message: "the HPA controller was able to get the target's current scale"}
	setHPAConditions(ableToScale, autoscalingv2.HorizontalPodAutoscalerCondition{Type: autoscalingv2.ScalingActive, Status: corev1.ConditionFalse,
		Reason: "FailedGetResourceMetric", Message: "the HPA was unable to compute the replica count: failed to get cpu utilization: missing request for cpu in container app of Pod stuck-1"})
	testutil.WaitFor(t, env.Client, key, &mooringv1.App{}, "Autoscaling=False with the HPA's reason", func(a *mooringv1.App) error {
		c := condition(a, mooringv1.ConditionAutoscaling)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != "FailedGetResourceMetric" || !strings.Contains(c.Message, "missing request for cpu") {
			return fmt.Errorf("Autoscaling %+v, want False/FailedGetResourceMetric naming the missing cpu request", c)
		}
		return nil
	})

	setHPAConditions(ableToScale, autoscalingv2.HorizontalPodAutoscalerCondition{Type: autoscalingv2.ScalingActive, Status: corev1.ConditionTrue,
		Reason: "ValidMetricFound", Message: "the HPA was able to successfully calculate a replica count from cpu resource utilization"})
	testutil.WaitFor(t, env.Client, key, &mooringv1.App{}, "Autoscaling=True once the HPA scales", func(a *mooringv1.App) error {
		if c := condition(a, mooringv1.ConditionAutoscaling); c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("Autoscaling %+v, want True", c)
		}
		return nil
	})
}

// A ConfigMap or Secret in spec.envFrom that does not exist yet holds the App back with a
// condition and an event; it proceeds the moment they appear (index and watch, no polling).
func TestEnvFromWaitsForItsReferences(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	a := createApp(t, ns, "envfrom", func(a *mooringv1.App) {
		a.Spec.EnvFrom = []corev1.EnvFromSource{
			{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}},
			{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "api-keys"}}},
			{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "extras"}, Optional: ptr.To(true)}},
		}
	})
	key := client.ObjectKeyFromObject(a)
	testutil.WaitFor(t, env.Client, key, &mooringv1.App{}, "EnvFromReady=False naming both", func(a *mooringv1.App) error {
		c := condition(a, mooringv1.ConditionEnvFromReady)
		if c == nil || c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "ConfigMap settings") || !strings.Contains(c.Message, "Secret api-keys") ||
			strings.Contains(c.Message, "extras") || a.Status.Phase != mooringv1.AppPending {
			return fmt.Errorf("EnvFromReady %+v phase %s", c, a.Status.Phase)
		}
		return nil
	})
	testutil.WaitEvent(t, env.Client, ns, corev1.EventTypeWarning, mooringv1.ReasonEnvFromMissing, "envfrom")
	if err := env.Client.Get(ctx, key, &appsv1.Deployment{}); !apierrors.IsNotFound(err) {
		t.Fatalf("Deployment of a waiting App: %v, want none", err)
	}

	// Not labelled for Mooring, like any ConfigMap a team writes.
	if err := env.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: ns}, Data: map[string]string{"LEVEL": "debug"}}); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, env.Client, key, &mooringv1.App{}, "only the Secret missing", func(a *mooringv1.App) error {
		if c := condition(a, mooringv1.ConditionEnvFromReady); c == nil || strings.Contains(c.Message, "settings") || !strings.Contains(c.Message, "api-keys") {
			return fmt.Errorf("EnvFromReady %+v", c)
		}
		return nil
	})
	if err := env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "api-keys", Namespace: ns}, StringData: map[string]string{"TOKEN": "s3cr3t-value"}}); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, env.Client, key, &appsv1.Deployment{}, "Deployment with envFrom", func(d *appsv1.Deployment) error {
		if got := d.Spec.Template.Spec.Containers[0].EnvFrom; len(got) != 3 {
			return fmt.Errorf("envFrom %+v", got)
		}
		return nil
	})
	testutil.WaitFor(t, env.Client, key, &mooringv1.App{}, "EnvFromReady=True", func(a *mooringv1.App) error {
		if c := condition(a, mooringv1.ConditionEnvFromReady); c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("EnvFromReady %+v", c)
		}
		return nil
	})
}

// A change to a ConfigMap or Secret of spec.envFrom rolls the pods (variables are read only
// at start): the pod template carries a hash of the required sources' resourceVersions.
// An optional source is not part of it.
func TestEnvFromChangeRollsPods(t *testing.T) {
	ns := env.Namespace(t)
	for _, o := range []client.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: ns}, Data: map[string]string{"LEVEL": "info"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "api-keys", Namespace: ns}, StringData: map[string]string{"TOKEN": "t1"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "extras", Namespace: ns}, Data: map[string]string{"X": "1"}},
	} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	a := createApp(t, ns, "rolling", func(a *mooringv1.App) {
		a.Spec.EnvFrom = []corev1.EnvFromSource{
			{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}},
			{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "api-keys"}}},
			{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "extras"}, Optional: ptr.To(true)}},
		}
	})
	key := client.ObjectKeyFromObject(a)
	sum := func(d *appsv1.Deployment) string {
		return d.Spec.Template.Annotations[mooringv1.EnvFromChecksumAnnotation]
	}
	var first string
	testutil.WaitFor(t, env.Client, key, &appsv1.Deployment{}, "envFrom checksum on the pod template", func(d *appsv1.Deployment) error {
		if first = sum(d); first == "" {
			return fmt.Errorf("pod template annotations %v, want %s", d.Spec.Template.Annotations, mooringv1.EnvFromChecksumAnnotation)
		}
		return nil
	})

	testutil.Update(t, env.Client, types.NamespacedName{Namespace: ns, Name: "settings"}, &corev1.ConfigMap{}, func(cm *corev1.ConfigMap) {
		cm.Data["LEVEL"] = "debug"
	})
	var second string
	testutil.WaitFor(t, env.Client, key, &appsv1.Deployment{}, "checksum changed with the ConfigMap", func(d *appsv1.Deployment) error {
		if second = sum(d); second == first {
			return fmt.Errorf("%s still %s", mooringv1.EnvFromChecksumAnnotation, second)
		}
		return nil
	})
	testutil.Update(t, env.Client, types.NamespacedName{Namespace: ns, Name: "api-keys"}, &corev1.Secret{}, func(s *corev1.Secret) {
		s.Data["TOKEN"] = []byte("t2")
	})
	testutil.WaitFor(t, env.Client, key, &appsv1.Deployment{}, "checksum changed with the Secret", func(d *appsv1.Deployment) error {
		if got := sum(d); got == second || got == first {
			return fmt.Errorf("%s still %s", mooringv1.EnvFromChecksumAnnotation, got)
		}
		return nil
	})

	// The optional source changes nothing: the converged App makes no write, even after
	// the optional ConfigMap changed.
	testutil.Update(t, env.Client, types.NamespacedName{Namespace: ns, Name: "extras"}, &corev1.ConfigMap{}, func(cm *corev1.ConfigMap) {
		cm.Data["X"] = "2"
	})
	testutil.ExpectConvergedNoWrites(t, env.Client, app.Component, []types.NamespacedName{key}, func() *mooringv1.App { return &mooringv1.App{} },
		func(a *mooringv1.App) error {
			if a.Status.ObservedGeneration != a.Generation {
				return fmt.Errorf("observedGeneration %d generation %d", a.Status.ObservedGeneration, a.Generation)
			}
			return nil
		})
}

// makeDatabaseRunning plays the StatefulSet controller until the cluster is Running.
func makeDatabaseRunning(t *testing.T, key types.NamespacedName) {
	t.Helper()
	testutil.WaitFor(t, env.Client, key, &appsv1.StatefulSet{}, "database StatefulSet", func(*appsv1.StatefulSet) error { return nil })
	testutil.MarkStatefulSetReady(t, env.Client, key)
	testutil.WaitFor(t, env.Client, key, &v1beta1.DatabaseCluster{}, "database Running with status.binding", func(db *v1beta1.DatabaseCluster) error {
		if db.Status.Phase != v1beta1.DatabaseRunning || db.Status.Binding == nil {
			return fmt.Errorf("phase %s binding %+v", db.Status.Phase, db.Status.Binding)
		}
		return nil
	})
}

// makeCacheRunning plays the Deployment controller until the CacheInstance is Running.
func makeCacheRunning(t *testing.T, key types.NamespacedName) {
	t.Helper()
	testutil.Eventually(t, testutil.DefaultTimeout, "cache Deployment marked available", func() error {
		d := &appsv1.Deployment{}
		if err := env.Client.Get(ctx, key, d); err != nil {
			return err
		}
		n := *d.Spec.Replicas
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: n, UpdatedReplicas: n, ReadyReplicas: n, AvailableReplicas: n}
		return env.Client.Status().Update(ctx, d)
	})
	testutil.WaitFor(t, env.Client, key, &mooringv1.CacheInstance{}, "cache Running", func(c *mooringv1.CacheInstance) error {
		if c.Status.Phase != mooringv1.CacheInstanceRunning || c.Status.Binding == nil {
			return fmt.Errorf("phase %s binding %+v", c.Status.Phase, c.Status.Binding)
		}
		return nil
	})
}

func createDatabaseAndCache(t *testing.T, ns string) (db, cache types.NamespacedName) {
	t.Helper()
	d := &v1beta1.DatabaseCluster{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: ns},
		Spec: v1beta1.DatabaseClusterSpec{Engine: v1beta1.PostgreSQL, ReplicaCount: 1}}
	c := &mooringv1.CacheInstance{ObjectMeta: metav1.ObjectMeta{Name: "sessions", Namespace: ns},
		Spec: mooringv1.CacheInstanceSpec{Replicas: ptr.To[int32](1)}}
	for _, o := range []client.Object{d, c} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	return client.ObjectKeyFromObject(d), client.ObjectKeyFromObject(c)
}

var bindBoth = func(a *mooringv1.App) {
	a.Spec.Bindings = []mooringv1.AppBinding{
		{Name: "db", Ref: mooringv1.AppBindingRef{Kind: mooringv1.BindingKindDatabaseCluster, Name: "orders"}, Env: true},
		{Name: "cache", Ref: mooringv1.AppBindingRef{Kind: mooringv1.BindingKindCacheInstance, Name: "sessions"}},
	}
}

// An App bound to a database and a cache waits until both are Running, then gets their
// binding projected; a rotated password rolls the pods of an env binding once the
// database has it.
func TestBindingsWaitProjectAndRoll(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	dbKey, cacheKey := createDatabaseAndCache(t, ns)
	a := createApp(t, ns, "shop", bindBoth)
	key := client.ObjectKeyFromObject(a)
	testutil.WaitFor(t, env.Client, key, &mooringv1.App{}, "BindingsReady=False naming both", func(a *mooringv1.App) error {
		c := condition(a, mooringv1.ConditionBindingsReady)
		if c == nil || c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "DatabaseCluster orders") || !strings.Contains(c.Message, "CacheInstance sessions") {
			return fmt.Errorf("BindingsReady %+v", c)
		}
		return nil
	})
	testutil.WaitEvent(t, env.Client, ns, corev1.EventTypeWarning, mooringv1.ReasonBindingNotRunning, "shop")

	makeDatabaseRunning(t, dbKey)
	testutil.WaitFor(t, env.Client, key, &mooringv1.App{}, "only the cache waited for", func(a *mooringv1.App) error {
		c := condition(a, mooringv1.ConditionBindingsReady)
		if c == nil || c.Status != metav1.ConditionFalse || strings.Contains(c.Message, "orders") || !strings.Contains(c.Message, "sessions") {
			return fmt.Errorf("BindingsReady %+v", c)
		}
		return nil
	})
	if err := env.Client.Get(ctx, key, &appsv1.Deployment{}); !apierrors.IsNotFound(err) {
		t.Fatalf("Deployment while a binding waits: %v, want none", err)
	}
	makeCacheRunning(t, cacheKey)

	var firstSum string
	testutil.WaitFor(t, env.Client, key, &appsv1.Deployment{}, "Deployment with both bindings projected", func(d *appsv1.Deployment) error {
		vols := d.Spec.Template.Spec.Volumes
		if len(vols) != 2 || vols[0].Projected == nil || len(vols[0].Projected.Sources) != 2 ||
			vols[0].Projected.Sources[0].ConfigMap.Name != "orders-binding" || vols[0].Projected.Sources[1].Secret.Name != "orders-credentials" ||
			vols[1].Projected.Sources[0].ConfigMap.Name != "sessions-binding" {
			return fmt.Errorf("volumes %+v", vols)
		}
		firstSum = d.Spec.Template.Annotations[mooringv1.BindingsChecksumAnnotation]
		if firstSum == "" {
			return errors.New("no bindings checksum")
		}
		return nil
	})
	testutil.WaitFor(t, env.Client, key, &mooringv1.App{}, "BindingsReady=True", func(a *mooringv1.App) error {
		if c := condition(a, mooringv1.ConditionBindingsReady); c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("BindingsReady %+v", c)
		}
		return nil
	})

	// Rotate the password. The database changes it with a Job; only once that Job has
	// succeeded does its credentials revision advance, and the App's pods roll onto it.
	testutil.Update(t, env.Client, types.NamespacedName{Namespace: ns, Name: "orders-credentials"}, &corev1.Secret{}, func(s *corev1.Secret) {
		s.Data["password"] = []byte("rotated-password-value")
	})
	var job batchv1.Job
	testutil.Eventually(t, testutil.DefaultTimeout, "the database's credentials Job", func() error {
		jobs := &batchv1.JobList{}
		if err := env.Client.List(ctx, jobs, client.InNamespace(ns), client.MatchingLabels{v1beta1.CredentialsJobLabel: "credentials"}); err != nil {
			return err
		}
		if len(jobs.Items) != 1 {
			return fmt.Errorf("%d credentials Jobs", len(jobs.Items))
		}
		job = jobs.Items[0]
		return nil
	})
	testutil.WaitFor(t, env.Client, dbKey, &v1beta1.DatabaseCluster{}, "CredentialsSynced=False while the Job runs", func(db *v1beta1.DatabaseCluster) error {
		if c := meta.FindStatusCondition(db.Status.Conditions, v1beta1.ConditionCredentialsSynced); c == nil || c.Status != metav1.ConditionFalse {
			return fmt.Errorf("CredentialsSynced %+v", c)
		}
		return nil
	})
	d := &appsv1.Deployment{}
	if err := env.Client.Get(ctx, key, d); err != nil {
		t.Fatal(err)
	}
	if sum := d.Spec.Template.Annotations[mooringv1.BindingsChecksumAnnotation]; sum != firstSum {
		t.Fatalf("the pods rolled (checksum %s, was %s) before the database had the new password", sum, firstSum)
	}
	testutil.FinishJob(t, env.Client, client.ObjectKeyFromObject(&job), true)
	testutil.WaitFor(t, env.Client, key, &appsv1.Deployment{}, "checksum changed once the database has the new password", func(d *appsv1.Deployment) error {
		if sum := d.Spec.Template.Annotations[mooringv1.BindingsChecksumAnnotation]; sum == firstSum {
			return fmt.Errorf("checksum still %s", sum)
		}
		return nil
	})
	// Nothing secret reached the App's status or the Deployment.
	got := &mooringv1.App{}
	if err := env.Client.Get(ctx, key, got); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Get(ctx, key, d); err != nil {
		t.Fatal(err)
	}
	if s := fmt.Sprintf("%+v %+v", got.Status, d.Spec); strings.Contains(s, "rotated-password-value") {
		t.Fatal("the password reached the App's status or its Deployment")
	}
}

// An App whose database stops being Running after its binding resolved (a replica down, a
// rolling update) keeps applying its changes: a new image still rolls out, and
// BindingsReady=False only says why the service may not answer.
func TestBindingToServiceNotRunningStillAppliesChanges(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	dbKey, _ := createDatabaseAndCache(t, ns)
	makeDatabaseRunning(t, dbKey)
	a := createApp(t, ns, "orders-api", func(a *mooringv1.App) {
		a.Spec.Bindings = []mooringv1.AppBinding{{Name: "db", Ref: mooringv1.AppBindingRef{Kind: mooringv1.BindingKindDatabaseCluster, Name: "orders"}, Env: true}}
	})
	key := client.ObjectKeyFromObject(a)
	testutil.WaitFor(t, env.Client, key, &appsv1.Deployment{}, "Deployment with the binding", func(d *appsv1.Deployment) error {
		if vols := d.Spec.Template.Spec.Volumes; len(vols) != 1 || image(d) != "nginx:1.27" {
			return fmt.Errorf("image %s volumes %+v, want nginx:1.27 and the binding's volume", image(d), vols)
		}
		return nil
	})

	// The StatefulSet controller reports the replica down (envtest runs none: play it).
	testutil.Eventually(t, testutil.DefaultTimeout, "database StatefulSet marked unready", func() error {
		sts := &appsv1.StatefulSet{}
		if err := env.Client.Get(ctx, dbKey, sts); err != nil {
			return err
		}
		sts.Status = appsv1.StatefulSetStatus{ObservedGeneration: sts.Generation, Replicas: 1, UpdatedReplicas: 1}
		return env.Client.Status().Update(ctx, sts)
	})
	testutil.WaitFor(t, env.Client, key, &mooringv1.App{}, "BindingsReady=False once the database is not Running", func(a *mooringv1.App) error {
		if c := condition(a, mooringv1.ConditionBindingsReady); c == nil || c.Status != metav1.ConditionFalse {
			return fmt.Errorf("BindingsReady %+v, want False", c)
		}
		return nil
	})

	updateApp(t, key, func(a *mooringv1.App) { a.Spec.Image = "nginx:1.28" })
	testutil.WaitFor(t, env.Client, key, &appsv1.Deployment{}, "new image applied while the database is not Running", func(d *appsv1.Deployment) error {
		if image(d) != "nginx:1.28" || len(d.Spec.Template.Spec.Volumes) != 1 {
			return fmt.Errorf("image %s volumes %d, want nginx:1.28 with the binding kept", image(d), len(d.Spec.Template.Spec.Volumes))
		}
		return nil
	})
	testutil.WaitFor(t, env.Client, key, &mooringv1.App{}, "BindingsReady=False BindingDegraded, generation observed", func(a *mooringv1.App) error {
		c := condition(a, mooringv1.ConditionBindingsReady)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != mooringv1.ReasonBindingDegraded || !strings.Contains(c.Message, "DatabaseCluster orders") {
			return fmt.Errorf("BindingsReady %+v, want False/%s naming DatabaseCluster orders", c, mooringv1.ReasonBindingDegraded)
		}
		if ready := condition(a, mooringv1.ConditionReady); ready == nil || ready.Reason == mooringv1.ReasonWaiting {
			return fmt.Errorf("Ready %+v, want the rollout's, not %s", ready, mooringv1.ReasonWaiting)
		}
		if a.Status.ObservedGeneration != a.Generation {
			return fmt.Errorf("observedGeneration %d, generation %d", a.Status.ObservedGeneration, a.Generation)
		}
		return nil
	})

	// Running again: BindingsReady=True.
	makeDatabaseRunning(t, dbKey)
	testutil.WaitFor(t, env.Client, key, &mooringv1.App{}, "BindingsReady=True after the database recovers", func(a *mooringv1.App) error {
		if c := condition(a, mooringv1.ConditionBindingsReady); c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("BindingsReady %+v, want True", c)
		}
		return nil
	})
}

// installGatewayAPI installs the HTTPRoute CRD from the gateway-api module go.mod pins and
// waits until it is served.
func installGatewayAPI(t *testing.T) {
	t.Helper()
	env.Kubectl(t, "apply", "--server-side", "-f", testutil.GatewayAPICRD(t, "httproutes"))
	testutil.Eventually(t, testutil.DefaultTimeout, "HTTPRoute CRD established", func() error {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
		if err := env.Client.Get(ctx, types.NamespacedName{Name: "httproutes.gateway.networking.k8s.io"}, u); err != nil {
			return err
		}
		conditions, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range conditions {
			if m, ok := c.(map[string]any); ok && m["type"] == "Established" && m["status"] == "True" {
				return nil
			}
		}
		return fmt.Errorf("conditions %v", conditions)
	})
}

// setRouteParentStatus plays the controller of the Gateway the App's HTTPRoute at key
// names (envtest runs none): it reports conds for the route's parent, for its current
// generation.
func setRouteParentStatus(t *testing.T, key types.NamespacedName, conds ...metav1.Condition) {
	t.Helper()
	testutil.Eventually(t, testutil.DefaultTimeout, "HTTPRoute status written", func() error {
		r := &gatewayv1.HTTPRoute{}
		if err := env.Client.Get(ctx, key, r); err != nil {
			return err
		}
		for i := range conds {
			conds[i].ObservedGeneration, conds[i].LastTransitionTime = r.Generation, metav1.Now()
		}
		r.Status.Parents = []gatewayv1.RouteParentStatus{{
			ParentRef: r.Spec.ParentRefs[0], ControllerName: "example.com/gateway-controller", Conditions: conds,
		}}
		return env.Client.Status().Update(ctx, r)
	})
}

// Without the Gateway API the App says so in a condition and runs everything else; once
// the CRD is installed, the HTTPRoute is made (and watched), and pruned when expose goes.
func TestGatewayExposeWaitsForTheGatewayAPI(t *testing.T) {
	ns := env.Namespace(t)
	a := createApp(t, ns, "edge", func(a *mooringv1.App) {
		a.Spec.Port = ptr.To[int32](8080)
		a.Spec.Expose = &mooringv1.AppExpose{Host: "edge.example.com", Gateway: &mooringv1.AppGatewayRef{Name: "public"}}
	})
	key := client.ObjectKeyFromObject(a)
	testutil.WaitFor(t, env.Client, key, &mooringv1.App{}, "Exposed=False GatewayAPINotInstalled", func(a *mooringv1.App) error {
		c := condition(a, mooringv1.ConditionExposed)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != mooringv1.ReasonGatewayAPINotInstalled || a.Status.URL != "" {
			return fmt.Errorf("Exposed %+v url %q", c, a.Status.URL)
		}
		return nil
	})
	testutil.WaitFor(t, env.Client, key, &corev1.Service{}, "Service made all the same", func(*corev1.Service) error { return nil })

	installGatewayAPI(t)
	expectRouteCheckedByItsCRD(t, ns)
	// The App looks again every minute by itself; a touch saves the test that minute.
	updateApp(t, key, func(a *mooringv1.App) { a.Annotations = map[string]string{"example.com/nudge": "1"} })
	route := &gatewayv1.HTTPRoute{}
	testutil.WaitFor(t, env.Client, key, route, "HTTPRoute", func(r *gatewayv1.HTTPRoute) error {
		if len(r.Spec.ParentRefs) != 1 || r.Spec.ParentRefs[0].Name != "public" || !metav1.IsControlledBy(r, a) {
			return fmt.Errorf("spec %+v owners %v", r.Spec, r.OwnerReferences)
		}
		return nil
	})
	// Applied is not exposed: until the Gateway's controller reports on the route, the App
	// says it waits for it, with no URL.
	testutil.WaitFor(t, env.Client, key, &mooringv1.App{}, "Exposed=Unknown HTTPRouteApplied without a URL", func(a *mooringv1.App) error {
		c := condition(a, mooringv1.ConditionExposed)
		if c == nil || c.Status != metav1.ConditionUnknown || c.Reason != mooringv1.ReasonHTTPRouteApplied || a.Status.URL != "" {
			return fmt.Errorf("Exposed %+v url %q, want Unknown/%s and no URL", c, a.Status.URL, mooringv1.ReasonHTTPRouteApplied)
		}
		return nil
	})
	// The Gateway's listeners do not allow the route: its controller's reason and message.
	setRouteParentStatus(t, key,
		metav1.Condition{Type: "Accepted", Status: metav1.ConditionFalse, Reason: "NotAllowedByListeners", Message: "no listener allows routes from namespace " + ns},
		metav1.Condition{Type: "ResolvedRefs", Status: metav1.ConditionTrue, Reason: "ResolvedRefs", Message: "resolved"})
	testutil.WaitFor(t, env.Client, key, &mooringv1.App{}, "Exposed=False with the Gateway's reason", func(a *mooringv1.App) error {
		c := condition(a, mooringv1.ConditionExposed)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != "NotAllowedByListeners" || !strings.Contains(c.Message, "no listener allows routes") || a.Status.URL != "" {
			return fmt.Errorf("Exposed %+v url %q, want False/NotAllowedByListeners with its message and no URL", c, a.Status.URL)
		}
		return nil
	})
	// Accepted, but the backend does not resolve: False with that reason.
	setRouteParentStatus(t, key,
		metav1.Condition{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted", Message: "accepted"},
		metav1.Condition{Type: "ResolvedRefs", Status: metav1.ConditionFalse, Reason: "BackendNotFound", Message: "Service edge not found"})
	testutil.WaitFor(t, env.Client, key, &mooringv1.App{}, "Exposed=False BackendNotFound", func(a *mooringv1.App) error {
		c := condition(a, mooringv1.ConditionExposed)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != "BackendNotFound" || a.Status.URL != "" {
			return fmt.Errorf("Exposed %+v url %q, want False/BackendNotFound and no URL", c, a.Status.URL)
		}
		return nil
	})
	setRouteParentStatus(t, key,
		metav1.Condition{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted", Message: "accepted"},
		metav1.Condition{Type: "ResolvedRefs", Status: metav1.ConditionTrue, Reason: "ResolvedRefs", Message: "resolved"})
	testutil.WaitFor(t, env.Client, key, &mooringv1.App{}, "Exposed=True with the URL once accepted", func(a *mooringv1.App) error {
		c := condition(a, mooringv1.ConditionExposed)
		if c == nil || c.Status != metav1.ConditionTrue || c.Reason != mooringv1.ReasonHTTPRouteAccepted || a.Status.URL != "http://edge.example.com/" {
			return fmt.Errorf("Exposed %+v url %q, want True/%s and the URL", c, a.Status.URL, mooringv1.ReasonHTTPRouteAccepted)
		}
		return nil
	})
	// The HTTPRoute is watched now: deleting it brings it back.
	if err := env.Client.Delete(ctx, route); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, env.Client, key, &gatewayv1.HTTPRoute{}, "deleted HTTPRoute recreated", func(r *gatewayv1.HTTPRoute) error {
		if r.UID == route.UID {
			return errors.New("still the old HTTPRoute")
		}
		return nil
	})
	updateApp(t, key, func(a *mooringv1.App) { a.Spec.Expose = nil })
	testutil.WaitGone(t, env.Client, key, &gatewayv1.HTTPRoute{}, "HTTPRoute pruned with spec.expose")
	testutil.WaitFor(t, env.Client, key, &mooringv1.App{}, "Exposed condition and URL gone", func(a *mooringv1.App) error {
		if c := condition(a, mooringv1.ConditionExposed); c != nil || a.Status.URL != "" {
			return fmt.Errorf("Exposed %+v url %q", c, a.Status.URL)
		}
		return nil
	})
}

// An App that uses every optional field costs no write once converged.
func TestConvergedAppWithEveryFieldMakesNoWrites(t *testing.T) {
	ns := env.Namespace(t)
	dbKey, cacheKey := createDatabaseAndCache(t, ns)
	makeDatabaseRunning(t, dbKey)
	makeCacheRunning(t, cacheKey)
	if err := env.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: ns}, Data: map[string]string{"A": "1"}}); err != nil {
		t.Fatal(err)
	}
	a := createApp(t, ns, "everything", func(a *mooringv1.App) {
		a.Spec.Config = "c"
		a.Spec.Port = ptr.To[int32](8080)
		a.Spec.Command = []string{"/server"}
		a.Spec.Args = []string{"--v=2"}
		a.Spec.EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}}
		a.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](1000)}
		a.Spec.Expose = &mooringv1.AppExpose{Host: "everything.example.com", IngressClassName: ptr.To("nginx"), TLS: &mooringv1.AppTLS{Issuer: "letsencrypt"}}
		a.Spec.Autoscaling = &mooringv1.AppAutoscaling{MaxReplicas: 4, TargetMemoryUtilizationPercentage: ptr.To[int32](75)}
		a.Spec.HealthCheck = &mooringv1.AppHealthCheck{Path: "/healthz"}
		a.Spec.HighAvailability = ptr.To(true)
		bindBoth(a)
	})
	key := client.ObjectKeyFromObject(a)
	for _, child := range []client.Object{&networkingv1.Ingress{}, &autoscalingv2.HorizontalPodAutoscaler{}, &policyv1.PodDisruptionBudget{}} {
		testutil.WaitFor(t, env.Client, key, child, fmt.Sprintf("%T", child), func(client.Object) error { return nil })
	}
	// The HTTPRoute, with the fields the Gateway API's CRD defaults, converges too.
	installGatewayAPI(t)
	routed := createApp(t, ns, "routed", func(a *mooringv1.App) {
		a.Spec.Port = ptr.To[int32](8080)
		a.Spec.Expose = &mooringv1.AppExpose{Host: "routed.example.com", Path: "/shop", Gateway: &mooringv1.AppGatewayRef{Name: "public", Namespace: "infra", SectionName: "https"}}
	})
	routedKey := client.ObjectKeyFromObject(routed)
	testutil.WaitFor(t, env.Client, routedKey, &gatewayv1.HTTPRoute{}, "HTTPRoute", func(*gatewayv1.HTTPRoute) error { return nil })
	setRouteParentStatus(t, routedKey,
		metav1.Condition{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted", Message: "accepted"},
		metav1.Condition{Type: "ResolvedRefs", Status: metav1.ConditionTrue, Reason: "ResolvedRefs", Message: "resolved"})
	testutil.ExpectConvergedNoWrites(t, env.Client, app.Component, []types.NamespacedName{key, routedKey}, func() *mooringv1.App { return &mooringv1.App{} },
		func(a *mooringv1.App) error {
			exposed := condition(a, mooringv1.ConditionExposed)
			if a.Status.ObservedGeneration != a.Generation || exposed == nil || exposed.Status != metav1.ConditionTrue || a.Status.URL == "" {
				return fmt.Errorf("observedGeneration %d generation %d Exposed %+v url %q", a.Status.ObservedGeneration, a.Generation, exposed, a.Status.URL)
			}
			if c := condition(a, mooringv1.ConditionBindingsReady); a.Name == "everything" && (c == nil || c.Status != metav1.ConditionTrue || a.Status.URL != "https://everything.example.com/") {
				return fmt.Errorf("BindingsReady %+v url %q", c, a.Status.URL)
			}
			return nil
		})
}
