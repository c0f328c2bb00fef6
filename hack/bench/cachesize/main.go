// Command cachesize measures the Go heap one cached object costs, per kind: Mooring's
// children as its manager's cache holds them (trimmed by internal/manager's transforms)
// and as it held them before (managedFields and the last-applied annotation dropped,
// everything else kept), and the portal's Users as its cache holds them.
//
// It starts envtest with Mooring's manager (internal/testutil), creates N Apps (as
// hack/bench/app.yaml) and N CacheInstances (as hack/bench/cacheinstance.yaml) and N
// portal Users, waits for their children, reads every object whole from the API server
// and stops it; then, per kind, it puts N decoded copies through the cache's transform
// into a client-go indexer (the informer's store, with its namespace index) and reports
// the growth of the live heap after a forced GC, divided by N. The engine's own per-child
// record (internal/engine/trust.go) and controller-runtime's owner index are not in it:
// hack/opbench's heap per cached object, measured in the running operator, has them.
//
//	go run ./hack/bench/cachesize [-n 1000]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	goruntime "runtime"
	"text/tabwriter"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	portalv1alpha1 "github.com/mooringhq/mooring/api/portal/v1alpha1"
	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/internal/engine"
	"github.com/mooringhq/mooring/internal/manager"
	"github.com/mooringhq/mooring/internal/testutil"
)

func main() {
	n := flag.Int("n", 100, "Apps, CacheInstances and Users to create (envtest serves 256 Service addresses: at most 120 each)")
	jsonOut := flag.String("json", "", "also write the results as JSON to this file")
	flag.Parse()
	rows, err := run(*n)
	if err != nil {
		fmt.Fprintln(os.Stderr, "cachesize:", err)
		os.Exit(1)
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "kind\tof\tobjects\tbefore B/obj\tcached B/obj\tJSON B/obj\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.0f\t%.0f\t%.0f\t\n", r.Kind, r.Of, r.Objects, r.Before, r.Cached, r.JSON)
	}
	_ = tw.Flush()
	if *jsonOut != "" {
		b, _ := json.MarshalIndent(rows, "", "  ")
		if err := os.WriteFile(*jsonOut, b, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "cachesize:", err)
			os.Exit(1)
		}
	}
}

// row is one kind's result: Go heap per object in the cache before this change (Before:
// managedFields and last-applied dropped) and now (Cached), and the object's JSON size as
// the API server sends it.
type row struct {
	Kind    string  `json:"kind"`
	Of      string  `json:"of"`
	Objects int     `json:"objects"`
	Before  float64 `json:"before_bytes_per_object"`
	Cached  float64 `json:"cached_bytes_per_object"`
	JSON    float64 `json:"json_bytes_per_object"`
}

type kind struct {
	name, of  string
	list      client.ObjectList
	selector  client.ListOption
	transform toolscache.TransformFunc
	items     func(client.ObjectList) []client.Object
}

func run(n int) ([]row, error) {
	env, err := testutil.Start()
	if err != nil {
		return nil, err
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = env.Stop()
		}
	}()
	ctx := context.Background()
	// Mooring's scheme and the portal's Users, which the manager does not know.
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(mooringv1.AddToScheme(scheme))
	utilruntime.Must(portalv1alpha1.AddToScheme(scheme))
	c, err := client.New(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	if err := create(ctx, c, n); err != nil {
		return nil, err
	}
	transforms := manager.CacheOptions().ByObject
	transformOf := func(o client.Object) toolscache.TransformFunc {
		for k, by := range transforms {
			if fmt.Sprintf("%T", k) == fmt.Sprintf("%T", o) {
				return by.Transform
			}
		}
		return engine.StripUnread
	}
	component := func(c string) client.ListOption {
		return client.MatchingLabels{mooringv1.ComponentLabel: c, mooringv1.ManagedByLabel: mooringv1.ManagedBy}
	}
	kinds := []kind{
		{"Deployment", "App", &appsv1.DeploymentList{}, component(mooringv1.AppComponent), transformOf(&appsv1.Deployment{}), items},
		{"Service", "App", &corev1.ServiceList{}, component(mooringv1.AppComponent), transformOf(&corev1.Service{}), items},
		{"ConfigMap", "App", &corev1.ConfigMapList{}, component(mooringv1.AppComponent), transformOf(&corev1.ConfigMap{}), items},
		{"Deployment", "CacheInstance", &appsv1.DeploymentList{}, component(mooringv1.CacheInstanceComponent), transformOf(&appsv1.Deployment{}), items},
		{"Service", "CacheInstance", &corev1.ServiceList{}, component(mooringv1.CacheInstanceComponent), transformOf(&corev1.Service{}), items},
		{"ConfigMap", "CacheInstance", &corev1.ConfigMapList{}, component(mooringv1.CacheInstanceComponent), transformOf(&corev1.ConfigMap{}), items},
		// The portal's cache (internal/portal/store.NewCached) strips managedFields only.
		{"User", "portal", &portalv1alpha1.UserList{}, client.HasLabels{portalv1alpha1.IDLabel}, engine.StripUnread, items},
	}
	// Read whole, as the watch delivers them; measured after the API server is gone, so
	// nothing else allocates meanwhile.
	lists := make([][]client.Object, len(kinds))
	for i, k := range kinds {
		if err := waitList(ctx, c, k, n); err != nil {
			return nil, err
		}
		lists[i] = k.items(k.list)
	}
	stopped = true // Stop waits for the manager, which only stops once
	if err := env.Stop(); err != nil {
		return nil, err
	}
	var rows []row
	for i, k := range kinds {
		objs := lists[i]
		r := row{Kind: k.name, Of: k.of, Objects: len(objs)}
		r.Before = heapPerObject(objs, engine.StripUnread)
		r.Cached = heapPerObject(objs, k.transform)
		var size int
		for _, o := range objs {
			b, _ := json.Marshal(o)
			size += len(b)
		}
		r.JSON = float64(size) / float64(len(objs))
		rows = append(rows, r)
	}
	return rows, nil
}

// create makes n Apps and n CacheInstances (as hack/bench's templates) and n Users.
func create(ctx context.Context, c client.Client, n int) error {
	for _, ns := range []string{"apps", "caches"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			return err
		}
	}
	for i := range n {
		a := &mooringv1.App{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("app-%d", i), Namespace: "apps"},
			Spec: mooringv1.AppSpec{Image: "nginx:1.27", Replicas: ptr.To[int32](1), Port: ptr.To[int32](8080),
				Config: fmt.Sprintf("greeting=hello-%d\n", i)}}
		if err := c.Create(ctx, a); err != nil {
			return err
		}
		ci := &mooringv1.CacheInstance{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cache-%d", i), Namespace: "caches"},
			Spec: mooringv1.CacheInstanceSpec{Replicas: ptr.To[int32](1), MemoryMB: ptr.To[int32](64)}}
		if err := c.Create(ctx, ci); err != nil {
			return err
		}
		u := &portalv1alpha1.User{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("user-%d", i),
			Labels: map[string]string{portalv1alpha1.IDLabel: fmt.Sprintf("0f6c2a4e-5b1d-4c7e-9a3f-%012d", i)}},
			Spec: portalv1alpha1.UserSpec{ID: fmt.Sprintf("0f6c2a4e-5b1d-4c7e-9a3f-%012d", i), Username: fmt.Sprintf("user-%d", i),
				Email: fmt.Sprintf("user-%d@example.com", i), Role: portalv1alpha1.RoleDeveloper, Namespaces: []string{"team-a", "team-b"}}}
		if err := c.Create(ctx, u); err != nil {
			return err
		}
	}
	return nil
}

// waitList lists k until it has n objects (the manager is still creating children).
func waitList(ctx context.Context, c client.Client, k kind, n int) error {
	deadline, last := time.Now().Add(5*time.Minute), time.Now()
	for {
		if err := c.List(ctx, k.list, k.selector); err != nil {
			return err
		}
		got := len(k.items(k.list))
		if got >= n {
			return nil
		}
		if time.Since(last) > 10*time.Second {
			fmt.Fprintf(os.Stderr, "waiting for %s of %s: %d of %d\n", k.name, k.of, got, n)
			last = time.Now()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s of %s: %d after 5m, want %d", k.name, k.of, got, n)
		}
		time.Sleep(500 * time.Millisecond) // polling for the manager's creates, with a deadline above
	}
}

// heapPerObject is the live heap an indexer of deep copies of objs, put through
// transform, holds, per object.
func heapPerObject(objs []client.Object, transform toolscache.TransformFunc) float64 {
	before := liveHeap()
	store := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc})
	for _, o := range objs {
		t, err := transform(o.DeepCopyObject())
		if err != nil {
			panic(err)
		}
		if err := store.Add(t); err != nil {
			panic(err)
		}
	}
	after := liveHeap()
	goruntime.KeepAlive(store)
	return float64(after-before) / float64(len(objs))
}

func liveHeap() uint64 {
	var m goruntime.MemStats
	for range 3 {
		goruntime.GC()
	}
	goruntime.ReadMemStats(&m)
	return m.HeapAlloc
}

// items are a list's objects, whatever its kind (apimachinery's ExtractList points into
// the list's Items, so the objects measured are the ones the list holds).
func items(l client.ObjectList) []client.Object {
	objs, err := meta.ExtractList(l)
	if err != nil {
		panic(err) // every list above is a typed list with Items
	}
	out := make([]client.Object, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.(client.Object))
	}
	return out
}
