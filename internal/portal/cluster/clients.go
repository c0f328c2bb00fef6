package cluster

import (
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// MaxCachedIdentities bounds the identities whose clients an Impersonator keeps. Past
// it, one identity's clients are dropped for each new one (and made again when it
// comes back): the users active at once are far fewer, and each identity's clients
// hold a few tens of KB.
const MaxCachedIdentities = 512

// clients are the clients of one identity, each made the first time it is asked for.
// They share the portal's transport (client-go keeps one per TLS configuration), so
// connections to the API server are pooled across identities either way; what the
// cache saves is making a client, a typed clientset above all, on every request.
type clients struct {
	mu   sync.Mutex
	dyn  dynamic.Interface
	cs   kubernetes.Interface
	rest map[schema.GroupVersion]*rest.RESTClient
	// ctrl are controller-runtime clients, by the scheme they know.
	ctrl map[*runtime.Scheme]client.Client
}

// clientCache holds the clients of up to MaxCachedIdentities identities.
type clientCache struct {
	mu sync.Mutex
	m  map[Identity]*clients
}

// of returns the clients of id, making room when the cache is full.
func (c *clientCache) of(id Identity) *clients {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl, ok := c.m[id]; ok {
		return cl
	}
	if c.m == nil {
		c.m = map[Identity]*clients{}
	}
	if len(c.m) >= MaxCachedIdentities {
		for other := range c.m { // an arbitrary one: map order
			delete(c.m, other)
			break
		}
	}
	cl := &clients{}
	c.m[id] = cl
	return cl
}
