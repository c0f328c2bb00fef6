// Package cluster gives the portal its clients: as itself (for users, keys and
// bindings) and as a user, through impersonation, so that the API server's RBAC decides
// what a user may do and its audit log records who did it.
package cluster

import (
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	portalv1alpha1 "github.com/mooringhq/mooring/api/portal/v1alpha1"
)

// DefaultUsersNamespace is where the ServiceAccount identities of portal users live.
// Nothing runs there: the portal only impersonates names in it, and its RBAC allows it
// to impersonate ServiceAccounts of this one namespace and nobody else.
const DefaultUsersNamespace = "mooring-portal-users"

// GroupPrefix starts the group that carries a user's role ("mooring-portal:developer").
const GroupPrefix = "mooring-portal:"

// Identity is who the portal acts as for one user.
type Identity struct {
	// ServiceAccount is the name of the user's ServiceAccount in the users namespace.
	ServiceAccount string
	// UserName is the full impersonated user name.
	UserName string
	// Group carries the user's role.
	Group string
}

// Impersonator derives identities and makes clients acting as them.
type Impersonator struct {
	base      *rest.Config
	namespace string
	// clients keeps each identity's clients for its next requests.
	clients clientCache
	// mapper maps kinds to resources for the controller-runtime clients of every
	// identity: discovery answers everyone alike, so it is asked once, as the portal,
	// not once per client made.
	mapperOnce sync.Once
	mapper     meta.RESTMapper
	mapperErr  error
}

// NewImpersonator returns an Impersonator over the portal's own config; usersNamespace
// is the namespace of the users' ServiceAccount identities.
func NewImpersonator(base *rest.Config, usersNamespace string) *Impersonator {
	return &Impersonator{base: base, namespace: usersNamespace}
}

// Namespace is the users namespace.
func (i *Impersonator) Namespace() string { return i.namespace }

// IdentityOf is the identity of user id with role.
func (i *Impersonator) IdentityOf(id string, role portalv1alpha1.Role) Identity {
	sa := "u-" + id
	return Identity{
		ServiceAccount: sa,
		UserName:       "system:serviceaccount:" + i.namespace + ":" + sa,
		Group:          GroupPrefix + string(role),
	}
}

// Config returns a copy of the portal's config that impersonates id. The group is
// always given: then the API server adds only system:authenticated, not the groups of
// every ServiceAccount, so nothing bound to system:serviceaccounts leaks to users.
func (i *Impersonator) Config(id Identity) *rest.Config {
	cfg := rest.CopyConfig(i.base)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: id.UserName, Groups: []string{id.Group}}
	return cfg
}

// Dynamic returns a dynamic client acting as id.
func (i *Impersonator) Dynamic(id Identity) (dynamic.Interface, error) {
	cl := i.clients.of(id)
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if cl.dyn == nil {
		c, err := dynamic.NewForConfig(i.Config(id))
		if err != nil {
			return nil, fmt.Errorf("client for %s: %w", id.UserName, err)
		}
		cl.dyn = c
	}
	return cl.dyn, nil
}

// Clientset returns a typed client acting as id.
func (i *Impersonator) Clientset(id Identity) (kubernetes.Interface, error) {
	cl := i.clients.of(id)
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if cl.cs == nil {
		c, err := kubernetes.NewForConfig(i.Config(id))
		if err != nil {
			return nil, fmt.Errorf("client for %s: %w", id.UserName, err)
		}
		cl.cs = c
	}
	return cl.cs, nil
}

// Client returns a controller-runtime client knowing the kinds of kinds, acting as id.
func (i *Impersonator) Client(id Identity, kinds *runtime.Scheme) (client.Client, error) {
	i.mapperOnce.Do(func() {
		hc, err := rest.HTTPClientFor(i.base)
		if err != nil {
			i.mapperErr = err
			return
		}
		i.mapper, i.mapperErr = apiutil.NewDynamicRESTMapper(i.base, hc)
	})
	if i.mapperErr != nil {
		return nil, fmt.Errorf("discovery for clients: %w", i.mapperErr)
	}
	cl := i.clients.of(id)
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if c, ok := cl.ctrl[kinds]; ok {
		return c, nil
	}
	c, err := client.New(i.Config(id), client.Options{Scheme: kinds, Mapper: i.mapper})
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", id.UserName, err)
	}
	if cl.ctrl == nil {
		cl.ctrl = map[*runtime.Scheme]client.Client{}
	}
	cl.ctrl[kinds] = c
	return c, nil
}

// REST returns a client of the API group version gv acting as id, for reads whose
// answer the caller decodes itself (a list parsed once rather than by the dynamic
// client's several passes). Errors are the API server's, as *apierrors.StatusError.
func (i *Impersonator) REST(id Identity, gv schema.GroupVersion) (*rest.RESTClient, error) {
	cl := i.clients.of(id)
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if c, ok := cl.rest[gv]; ok {
		return c, nil
	}
	cfg := i.Config(id)
	cfg.GroupVersion, cfg.APIPath = &gv, "/apis"
	if gv.Group == "" {
		cfg.APIPath = "/api"
	}
	cfg.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	c, err := rest.RESTClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", id.UserName, err)
	}
	if cl.rest == nil {
		cl.rest = map[schema.GroupVersion]*rest.RESTClient{}
	}
	cl.rest[gv] = c
	return c, nil
}
