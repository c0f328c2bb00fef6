package engine

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/source"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
)

// optionalKinds are child kinds whose API another project installs (the Gateway API's
// HTTPRoute): the manager must start, and the other kinds reconcile, whether or not it is
// served. The manager's cache cannot hold them (it resolves every kind it is configured
// for when it starts), so each gets a cache of its own, restricted like the manager's to
// Mooring's labelled children, started with its watch the first time a reconcile finds
// the kind served.
type optionalKinds struct {
	mgr   ctrl.Manager
	owner client.Object
	ctrl  controller.Controller
	kinds map[schema.GroupVersionKind]client.Object

	// ctx lives as long as the manager runs (stopped by a runnable), not a reconcile.
	ctx context.Context

	mu      sync.Mutex
	readers map[schema.GroupVersionKind]client.Reader
	stops   []context.CancelFunc
}

func newOptionalKinds(mgr ctrl.Manager, owner client.Object, objs []client.Object) (*optionalKinds, error) {
	o := &optionalKinds{mgr: mgr, owner: owner, kinds: map[schema.GroupVersionKind]client.Object{}, readers: map[schema.GroupVersionKind]client.Reader{}}
	if len(objs) == 0 {
		return o, nil
	}
	for _, obj := range objs {
		gvk, err := apiutil.GVKForObject(obj, mgr.GetScheme())
		if err != nil {
			return nil, err
		}
		o.kinds[gvk] = obj
	}
	ctx, cancel := context.WithCancel(context.Background())
	o.ctx = ctx
	err := mgr.Add(manager.RunnableFunc(func(mgrCtx context.Context) error {
		<-mgrCtx.Done()
		cancel()
		return nil
	}))
	return o, err
}

// started returns the optional kinds whose cache runs, with their readers.
func (o *optionalKinds) started() map[schema.GroupVersionKind]client.Reader {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make(map[schema.GroupVersionKind]client.Reader, len(o.readers))
	for gvk, r := range o.readers {
		out[gvk] = r
	}
	return out
}

func (o *optionalKinds) isOptional(gvk schema.GroupVersionKind) bool {
	_, ok := o.kinds[gvk]
	return ok
}

// reader returns the cache of an optional kind, or nil while the API server does not
// serve it. The first call that finds it served starts its cache and its watch.
func (o *optionalKinds) reader(ctx context.Context, gvk schema.GroupVersionKind) (client.Reader, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if r, ok := o.readers[gvk]; ok {
		return r, nil
	}
	// The manager's RESTMapper asks discovery again for a group it does not know, so a
	// CRD installed after Mooring started is found here.
	if _, err := o.mgr.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
		if meta.IsNoMatchError(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("look up %s: %w", gvk, err)
	}
	c, err := cache.New(o.mgr.GetConfig(), cache.Options{
		Scheme:               o.mgr.GetScheme(),
		Mapper:               o.mgr.GetRESTMapper(),
		DefaultLabelSelector: labels.SelectorFromSet(labels.Set{mooringv1.ManagedByLabel: mooringv1.ManagedBy}),
		// Optional kinds are children whose status alone Mooring reads (an HTTPRoute's
		// parents): trimmed to it, like the manager's cache trims the built-in kinds.
		DefaultTransform: Trim(KeepStatus[client.Object]),
	})
	if err != nil {
		return nil, fmt.Errorf("cache for %s: %w", gvk.Kind, err)
	}
	obj := o.kinds[gvk]
	owners := handler.EnqueueRequestForOwner(o.mgr.GetScheme(), o.mgr.GetRESTMapper(), o.owner, handler.OnlyControllerOwner())
	if _, err := c.GetInformer(ctx, obj); err != nil {
		return nil, fmt.Errorf("informer for %s: %w", gvk.Kind, err)
	}
	cacheCtx, stop := context.WithCancel(o.ctx)
	go func() {
		if err := c.Start(cacheCtx); err != nil {
			ctrl.Log.Error(err, "Cache of an optional kind stopped", "kind", gvk.Kind)
		}
	}()
	if !c.WaitForCacheSync(ctx) {
		stop()
		return nil, fmt.Errorf("cache for %s did not sync", gvk.Kind)
	}
	if err := o.ctrl.Watch(source.Kind(c, obj, owners)); err != nil {
		stop()
		return nil, fmt.Errorf("watch %s: %w", gvk.Kind, err)
	}
	ctrl.LoggerFrom(ctx).Info("Watching optional kind now that it is served", "kind", gvk.Kind)
	o.readers[gvk] = c
	o.stops = append(o.stops, stop) // the cache runs until the manager stops
	return c, nil
}
