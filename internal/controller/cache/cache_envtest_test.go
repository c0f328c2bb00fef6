package cache_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/internal/controller/cache"
	"github.com/mooringhq/mooring/internal/testutil"
)

var ctx = context.Background()

func createCache(t *testing.T, ns, name string, mutate func(*mooringv1.CacheInstance)) *mooringv1.CacheInstance {
	t.Helper()
	c := &mooringv1.CacheInstance{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	if mutate != nil {
		mutate(c)
	}
	if err := env.Client.Create(ctx, c); err != nil {
		t.Fatalf("create CacheInstance: %v", err)
	}
	return c
}

// updateCache changes the CacheInstance as a user's kubectl edit would, retrying on
// conflicts.
func updateCache(t *testing.T, key types.NamespacedName, change func(*mooringv1.CacheInstance)) {
	t.Helper()
	testutil.Update(t, env.Client, key, &mooringv1.CacheInstance{}, change)
}

func memcached(d *appsv1.Deployment) corev1.Container { return d.Spec.Template.Spec.Containers[0] }

func memoryLimit(c corev1.Container) string {
	q := c.Resources.Limits[corev1.ResourceMemory]
	return q.String()
}

func TestCacheCreatesChildrenWithOwnerAndLabels(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	c := createCache(t, ns, "sessions", func(c *mooringv1.CacheInstance) { c.Spec.Replicas = ptr.To[int32](2) })
	key := client.ObjectKeyFromObject(c)
	for _, child := range []client.Object{&appsv1.Deployment{}, &corev1.Service{}, &policyv1.PodDisruptionBudget{}} {
		testutil.WaitFor(t, env.Client, key, child, fmt.Sprintf("%T sessions owned and labelled", child), func(o client.Object) error {
			if !metav1.IsControlledBy(o, c) {
				return fmt.Errorf("owner references %v do not name CacheInstance sessions (uid %s) as controller", o.GetOwnerReferences(), c.UID)
			}
			want := map[string]string{mooringv1.NameLabel: "sessions", mooringv1.InstanceLabel: "sessions", mooringv1.ComponentLabel: cache.Component, mooringv1.ManagedByLabel: "mooring"}
			for k, v := range want {
				if o.GetLabels()[k] != v {
					return fmt.Errorf("label %s=%q, want %q (labels %v)", k, o.GetLabels()[k], v, o.GetLabels())
				}
			}
			return nil
		})
	}
	testutil.WaitFor(t, env.Client, key, &appsv1.Deployment{}, "Deployment running memcached with the defaults", func(d *appsv1.Deployment) error {
		m := memcached(d)
		wantArgs := []string{"-m", "64", "-c", "1024", "-p", "11211"}
		if *d.Spec.Replicas != 2 || m.Image != "memcached:1.6" || !slices.Equal(m.Args, wantArgs) {
			return fmt.Errorf("replicas %d image %s args %q, want 2 memcached:1.6 %q", *d.Spec.Replicas, m.Image, m.Args, wantArgs)
		}
		return nil
	})
	testutil.WaitFor(t, env.Client, key, &corev1.Service{}, "headless Service", func(s *corev1.Service) error {
		if s.Spec.ClusterIP != corev1.ClusterIPNone || len(s.Spec.Ports) != 1 || s.Spec.Ports[0].Port != 11211 {
			return fmt.Errorf("clusterIP %q ports %+v, want None and 11211", s.Spec.ClusterIP, s.Spec.Ports)
		}
		return nil
	})
	testutil.WaitFor(t, env.Client, key, &policyv1.PodDisruptionBudget{}, "PodDisruptionBudget with maxUnavailable 1", func(p *policyv1.PodDisruptionBudget) error {
		if p.Spec.MaxUnavailable == nil || p.Spec.MaxUnavailable.IntValue() != 1 {
			return fmt.Errorf("maxUnavailable %v", p.Spec.MaxUnavailable)
		}
		return nil
	})
	// Nothing is available yet: envtest runs no Deployment controller.
	testutil.WaitFor(t, env.Client, key, &mooringv1.CacheInstance{}, "CacheInstance Pending with selector and endpoint", func(c *mooringv1.CacheInstance) error {
		if c.Status.Phase != mooringv1.CacheInstancePending || c.Status.Selector == "" || c.Status.Endpoint != "sessions."+ns+".svc:11211" {
			return fmt.Errorf("phase %q selector %q endpoint %q", c.Status.Phase, c.Status.Selector, c.Status.Endpoint)
		}
		return nil
	})
}

// The PodDisruptionBudget exists exactly while there is more than one replica, also when
// the replicas change through the scale subresource.
func TestCachePodDisruptionBudgetFollowsReplicas(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	c := createCache(t, ns, "pdb", func(c *mooringv1.CacheInstance) { c.Spec.Replicas = ptr.To[int32](2) })
	key := client.ObjectKeyFromObject(c)
	testutil.WaitFor(t, env.Client, key, &policyv1.PodDisruptionBudget{}, "PodDisruptionBudget at 2 replicas", func(*policyv1.PodDisruptionBudget) error { return nil })

	updateCache(t, key, func(c *mooringv1.CacheInstance) { c.Spec.Replicas = ptr.To[int32](1) })
	testutil.WaitGone(t, env.Client, key, &policyv1.PodDisruptionBudget{}, "PodDisruptionBudget deleted at 1 replica")
	testutil.WaitFor(t, env.Client, key, &appsv1.Deployment{}, "Deployment scaled to 1", func(d *appsv1.Deployment) error {
		if *d.Spec.Replicas != 1 {
			return fmt.Errorf("replicas %d", *d.Spec.Replicas)
		}
		return nil
	})

	env.Kubectl(t, "scale", "-n", ns, "cacheinstance/pdb", "--replicas=3")
	testutil.WaitFor(t, env.Client, key, &policyv1.PodDisruptionBudget{}, "PodDisruptionBudget back after kubectl scale to 3", func(*policyv1.PodDisruptionBudget) error { return nil })
	testutil.WaitFor(t, env.Client, key, &appsv1.Deployment{}, "Deployment scaled to 3", func(d *appsv1.Deployment) error {
		if *d.Spec.Replicas != 3 {
			return fmt.Errorf("replicas %d", *d.Spec.Replicas)
		}
		return nil
	})
}

func TestCacheMemoryChangeUpdatesArgsAndLimit(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	c := createCache(t, ns, "mem", nil)
	key := client.ObjectKeyFromObject(c)
	testutil.WaitFor(t, env.Client, key, &appsv1.Deployment{}, "Deployment at 64 MB", func(d *appsv1.Deployment) error {
		if m := memcached(d); m.Args[1] != "64" || memoryLimit(m) != "112Mi" {
			return fmt.Errorf("args %q limit %s, want -m 64 and 112Mi", m.Args, memoryLimit(m))
		}
		return nil
	})

	updateCache(t, key, func(c *mooringv1.CacheInstance) { c.Spec.MemoryMB = ptr.To[int32](1024) })
	testutil.WaitFor(t, env.Client, key, &appsv1.Deployment{}, "args and memory to follow memoryMB 1024", func(d *appsv1.Deployment) error {
		m := memcached(d)
		request := m.Resources.Requests[corev1.ResourceMemory]
		if m.Args[1] != "1024" || memoryLimit(m) != "1143Mi" || request.String() != "1143Mi" {
			return fmt.Errorf("args %q limit %s request %s, want -m 1024 and 1143Mi for both", m.Args, memoryLimit(m), request.String())
		}
		return nil
	})
}

func TestCacheStatusFollowsDeployment(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	c := createCache(t, ns, "status", func(c *mooringv1.CacheInstance) {
		c.Spec.Replicas = ptr.To[int32](2)
		c.Spec.Port = ptr.To[int32](11311)
	})
	key := client.ObjectKeyFromObject(c)
	d := &appsv1.Deployment{}
	testutil.WaitFor(t, env.Client, key, d, "Deployment", func(*appsv1.Deployment) error { return nil })

	// envtest runs no Deployment controller: play its part.
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2}
	if err := env.Client.Status().Update(ctx, d); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, env.Client, key, &mooringv1.CacheInstance{}, "CacheInstance Running with Ready=True", func(c *mooringv1.CacheInstance) error {
		ready := meta.FindStatusCondition(c.Status.Conditions, mooringv1.ConditionReady)
		prog := meta.FindStatusCondition(c.Status.Conditions, mooringv1.ConditionProgressing)
		switch {
		case c.Status.Phase != mooringv1.CacheInstanceRunning || c.Status.AvailableReplicas != 2 || c.Status.Replicas != 2:
			return fmt.Errorf("phase %s available %d replicas %d", c.Status.Phase, c.Status.AvailableReplicas, c.Status.Replicas)
		case c.Status.Endpoint != "status."+ns+".svc:11311":
			return fmt.Errorf("endpoint %q", c.Status.Endpoint)
		case ready == nil || ready.Status != metav1.ConditionTrue || ready.Reason != mooringv1.ReasonAllReplicasAvailable:
			return fmt.Errorf("Ready %+v", ready)
		case prog == nil || prog.Status != metav1.ConditionFalse || prog.Reason != mooringv1.ReasonRolloutComplete:
			return fmt.Errorf("Progressing %+v", prog)
		case c.Status.ObservedGeneration != c.Generation:
			return fmt.Errorf("observedGeneration %d, generation %d", c.Status.ObservedGeneration, c.Generation)
		}
		return nil
	})

	// A scale-up makes the CacheInstance NotReady until the Deployment catches up.
	updateCache(t, key, func(c *mooringv1.CacheInstance) { c.Spec.Replicas = ptr.To[int32](3) })
	testutil.WaitFor(t, env.Client, key, &mooringv1.CacheInstance{}, "CacheInstance NotReady while scaling", func(c *mooringv1.CacheInstance) error {
		ready := meta.FindStatusCondition(c.Status.Conditions, mooringv1.ConditionReady)
		if c.Status.Phase != mooringv1.CacheInstanceNotReady || c.Status.ObservedGeneration != c.Generation ||
			ready == nil || ready.Status != metav1.ConditionFalse {
			return fmt.Errorf("phase %s observedGeneration %d generation %d Ready %+v", c.Status.Phase, c.Status.ObservedGeneration, c.Generation, ready)
		}
		return nil
	})
}

func TestInvalidCacheInstancesRejected(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	tests := map[string]struct {
		mutate    func(*mooringv1.CacheInstance)
		wantField string
	}{
		"zero replicas":            {mutate: func(c *mooringv1.CacheInstance) { c.Spec.Replicas = ptr.To[int32](0) }, wantField: "spec.replicas"},
		"65 replicas":              {mutate: func(c *mooringv1.CacheInstance) { c.Spec.Replicas = ptr.To[int32](65) }, wantField: "spec.replicas"},
		"32 MB":                    {mutate: func(c *mooringv1.CacheInstance) { c.Spec.MemoryMB = ptr.To[int32](32) }, wantField: "spec.memoryMB"},
		"more than 64 GiB":         {mutate: func(c *mooringv1.CacheInstance) { c.Spec.MemoryMB = ptr.To[int32](65537) }, wantField: "spec.memoryMB"},
		"engine redis":             {mutate: func(c *mooringv1.CacheInstance) { c.Spec.Engine = "redis" }, wantField: "spec.engine"},
		"no connections":           {mutate: func(c *mooringv1.CacheInstance) { c.Spec.MaxConnections = ptr.To[int32](0) }, wantField: "spec.maxConnections"},
		"privileged port":          {mutate: func(c *mooringv1.CacheInstance) { c.Spec.Port = ptr.To[int32](80) }, wantField: "spec.port"},
		"version not an image tag": {mutate: func(c *mooringv1.CacheInstance) { c.Spec.Version = "1.6 latest" }, wantField: "spec.version"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			c := &mooringv1.CacheInstance{ObjectMeta: metav1.ObjectMeta{Name: "bad", Namespace: ns}}
			tt.mutate(c)
			err := env.Client.Create(ctx, c)
			if err == nil {
				_ = env.Client.Delete(ctx, c)
				t.Fatal("invalid CacheInstance was accepted")
			}
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tt.wantField) {
				t.Fatalf("error %q is not an Invalid error naming %s", err, tt.wantField)
			}
		})
	}
}

func TestCacheInstanceDefaults(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	check := func(c *mooringv1.CacheInstance) error {
		s := c.Spec
		if s.Engine != mooringv1.CacheEngineMemcached || s.Version != "1.6" || s.Image != "" ||
			ptr.Deref(s.Replicas, 0) != 1 || ptr.Deref(s.MemoryMB, 0) != 64 ||
			ptr.Deref(s.MaxConnections, 0) != 1024 || ptr.Deref(s.Port, 0) != 11211 {
			return fmt.Errorf("spec after defaulting = engine %q version %q image %q replicas %v memoryMB %v maxConnections %v port %v",
				s.Engine, s.Version, s.Image, ptr.Deref(s.Replicas, 0), ptr.Deref(s.MemoryMB, 0), ptr.Deref(s.MaxConnections, 0), ptr.Deref(s.Port, 0))
		}
		return nil
	}

	// An empty spec, as a Go client sends it.
	c := createCache(t, ns, "empty-spec", nil)
	if err := check(c); err != nil {
		t.Error(err)
	}

	// No spec at all, as a minimal manifest has it.
	manifest := filepath.Join(t.TempDir(), "cache.yaml")
	if err := os.WriteFile(manifest, []byte("apiVersion: mooring.dev/v1\nkind: CacheInstance\nmetadata:\n  name: no-spec\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env.Kubectl(t, "apply", "-n", ns, "-f", manifest)
	noSpec := &mooringv1.CacheInstance{}
	if err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "no-spec"}, noSpec); err != nil {
		t.Fatal(err)
	}
	if err := check(noSpec); err != nil {
		t.Errorf("without a spec: %v", err)
	}
}

// A Deployment of the same name that the CacheInstance does not control is not taken
// over: the CacheInstance reports the conflict instead.
func TestCacheNameTakenByApp(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	a := &mooringv1.App{
		ObjectMeta: metav1.ObjectMeta{Name: "shared", Namespace: ns},
		Spec:       mooringv1.AppSpec{Image: "nginx:1.27"},
	}
	if err := env.Client.Create(ctx, a); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, env.Client, client.ObjectKeyFromObject(a), &appsv1.Deployment{}, "the App's Deployment", func(*appsv1.Deployment) error { return nil })

	c := createCache(t, ns, "shared", nil)
	testutil.WaitFor(t, env.Client, client.ObjectKeyFromObject(c), &mooringv1.CacheInstance{}, "CacheInstance in Error naming the conflict", func(c *mooringv1.CacheInstance) error {
		ready := meta.FindStatusCondition(c.Status.Conditions, mooringv1.ConditionReady)
		if c.Status.Phase != mooringv1.CacheInstanceError || ready == nil || ready.Reason != mooringv1.ReasonReconcileError ||
			!strings.Contains(ready.Message, "Deployment shared already exists") {
			return fmt.Errorf("phase %q Ready %+v", c.Status.Phase, ready)
		}
		return nil
	})
	d := &appsv1.Deployment{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(a), d); err != nil {
		t.Fatal(err)
	}
	if !metav1.IsControlledBy(d, a) || memcached(d).Image != "nginx:1.27" {
		t.Fatalf("the App's Deployment was changed: owners %v image %s", d.GetOwnerReferences(), memcached(d).Image)
	}
}

// A converged CacheInstance costs nothing: reconciling it again sends no write to the
// API server.
func TestConvergedCacheReconcileMakesNoWrites(t *testing.T) {
	ns := env.Namespace(t)
	const n = 4
	for i := range n {
		// Two replicas, so the PodDisruptionBudget is part of what must stay quiet.
		createCache(t, ns, fmt.Sprintf("quiet-%d", i), func(c *mooringv1.CacheInstance) { c.Spec.Replicas = ptr.To[int32](2) })
	}
	var keys []types.NamespacedName
	for i := range n {
		keys = append(keys, types.NamespacedName{Namespace: ns, Name: fmt.Sprintf("quiet-%d", i)})
	}
	testutil.ExpectConvergedNoWrites(t, env.Client, cache.Component, keys, func() *mooringv1.CacheInstance { return &mooringv1.CacheInstance{} },
		func(c *mooringv1.CacheInstance) error {
			if c.Status.ObservedGeneration != c.Generation || c.Status.Phase == "" {
				return fmt.Errorf("observedGeneration %d generation %d phase %q", c.Status.ObservedGeneration, c.Generation, c.Status.Phase)
			}
			return nil
		})
}

// The sample shows the print columns in `kubectl get`, and the API explains its fields.
func TestSampleCacheInstanceShowsPrintColumns(t *testing.T) {
	t.Parallel()
	ns := env.Namespace(t)
	env.Kubectl(t, "apply", "-n", ns, "-f", testutil.RepoRoot()+"/config/samples/mooring_v1_cacheinstance.yaml")
	testutil.WaitFor(t, env.Client, types.NamespacedName{Namespace: ns, Name: "sessions"}, &mooringv1.CacheInstance{}, "sample CacheInstance reconciled", func(c *mooringv1.CacheInstance) error {
		if c.Status.Phase == "" {
			return errors.New("no phase yet")
		}
		return nil
	})
	out := env.Kubectl(t, "get", "cacheinstances", "-n", ns)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("kubectl get cacheinstances printed %d lines, want a header and one CacheInstance:\n%s", len(lines), out)
	}
	if got := strings.Join(strings.Fields(lines[0]), " "); got != "NAME ENGINE REPLICAS MEMORY AVAILABLE PHASE AGE" {
		t.Errorf("columns = %s, want NAME ENGINE REPLICAS MEMORY AVAILABLE PHASE AGE", got)
	}
	if got := strings.Fields(lines[1]); len(got) != 7 || strings.Join(got[:6], " ") != "sessions memcached 2 128 0 Pending" {
		t.Errorf("row = %v, want sessions memcached 2 128 0 Pending <age>", got)
	}
	t.Logf("kubectl get cacheinstances:\n%s", out)

	wide := env.Kubectl(t, "get", "cacheinstances", "-n", ns, "-o", "wide")
	if !strings.Contains(wide, "sessions."+ns+".svc:11211") {
		t.Errorf("kubectl get -o wide does not show the endpoint:\n%s", wide)
	}
	explain := env.Kubectl(t, "explain", "cacheinstance.spec.memoryMB")
	// kubectl wraps the description; the field's first words stay on one line.
	if !strings.Contains(explain, "MemoryMB is the memory for items") {
		t.Errorf("kubectl explain cacheinstance.spec.memoryMB does not describe the field:\n%s", explain)
	}
}
