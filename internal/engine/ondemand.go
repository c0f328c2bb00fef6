package engine

import (
	"fmt"
	"sync"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// OnDemandWatch is a watch a kind needs only for some of its objects, started the first
// time a reconcile asks for it (Scope.StartWatch) rather than with the controller: a
// cluster where no object needs it pays nothing for it. Example: the metadata of every
// ConfigMap, which only Apps with spec.envFrom need.
type OnDemandWatch struct {
	// Name is what Scope.StartWatch asks for.
	Name string
	// Source is the watch, typically source.Kind on a cache of its own.
	Source source.Source
}

type onDemandWatches struct {
	ctrl    controller.Controller
	mu      sync.Mutex
	sources map[string]source.Source
	started map[string]bool
}

func newOnDemandWatches(ws []OnDemandWatch) *onDemandWatches {
	o := &onDemandWatches{sources: map[string]source.Source{}, started: map[string]bool{}}
	for _, w := range ws {
		o.sources[w.Name] = w.Source
	}
	return o
}

func (o *onDemandWatches) start(name string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.started[name] {
		return nil
	}
	src, ok := o.sources[name]
	if !ok {
		return fmt.Errorf("no on-demand watch %q", name)
	}
	if err := o.ctrl.Watch(src); err != nil {
		return fmt.Errorf("start watch %s: %w", name, err)
	}
	o.started[name] = true
	return nil
}

// NewReferenceCache adds to the manager a cache of its own for objects Mooring reads but
// does not own (a ConfigMap an App's envFrom names, a volume a Backup writes to), which
// the manager's cache, holding only Mooring's labelled objects, does not have. Read and
// watch them as metadata only (metav1.PartialObjectMetadata): their data is never needed.
// Its informers start with the first read or on-demand watch of a kind.
func NewReferenceCache(mgr ctrl.Manager) (cache.Cache, error) {
	c, err := cache.New(mgr.GetConfig(), cache.Options{
		Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(),
		DefaultTransform: cache.TransformStripManagedFields(),
	})
	if err != nil {
		return nil, fmt.Errorf("cache for referenced objects: %w", err)
	}
	if err := mgr.Add(c); err != nil {
		return nil, err
	}
	return c, nil
}
