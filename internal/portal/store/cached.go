package store

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	portalv1alpha1 "github.com/mooringhq/mooring/api/portal/v1alpha1"
)

// CachedReader is a Users that can also answer from a watch-fed copy, which may lag
// the API server by the watch's delay but never runs ahead of it. Authentication
// reads through it; everything that decides a write reads the store itself.
type CachedReader interface {
	Users
	// GetCached returns the user named username as the cache holds it, or as this
	// replica last wrote it when the cache has not seen that write yet.
	GetCached(ctx context.Context, username string) (*portalv1alpha1.User, error)
}

// Cached is Kube with a watch-fed cache of the Users (nothing else, managedFields
// stripped) for GetCached. Writes go to the API server as Kube's do; each one is also
// remembered until the watch delivers it, so this replica reads its own writes at once
// (a logout or revocation made here holds here before the watch brings it back). A
// change made by another replica reaches the cache after the watch's delay. Until Run
// has filled the cache, and after it stops, GetCached reads the API server.
type Cached struct {
	*Kube
	cache   cache.Cache
	running atomic.Bool
	// synced is closed once the cache holds every User.
	synced chan struct{}

	mu sync.Mutex
	// written holds, by name, this replica's writes the cache has not delivered yet.
	written map[string]written
}

// written is a write of this replica: the User as the API server answered it, or, for
// a deletion, nil and the UID of the deleted User.
type written struct {
	user *portalv1alpha1.User
	uid  types.UID
}

var _ CachedReader = (*Cached)(nil)

// NewCached returns k with a cache of Users read with rc; Run fills and runs it.
func NewCached(k *Kube, rc *rest.Config, scheme *runtime.Scheme) (*Cached, error) {
	c, err := cache.New(rc, cache.Options{
		Scheme:                      scheme,
		ByObject:                    map[client.Object]cache.ByObject{&portalv1alpha1.User{}: {}},
		DefaultTransform:            cache.TransformStripManagedFields(),
		ReaderFailOnMissingInformer: true,
	})
	if err != nil {
		return nil, fmt.Errorf("cache of Users: %w", err)
	}
	return &Cached{Kube: k, cache: c, written: map[string]written{}, synced: make(chan struct{})}, nil
}

// Run watches the Users until ctx ends. GetCached answers from the cache once it
// holds every User, and reads the API server again when Run returns.
func (c *Cached) Run(ctx context.Context) error {
	inf, err := c.cache.GetInformer(ctx, &portalv1alpha1.User{})
	if err != nil {
		return fmt.Errorf("watch Users: %w", err)
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    c.delivered,
		UpdateFunc: func(_, obj any) { c.delivered(obj) },
		DeleteFunc: c.deleted,
	}); err != nil {
		return fmt.Errorf("watch Users: %w", err)
	}
	errc := make(chan error, 1)
	go func() { errc <- c.cache.Start(ctx) }()
	if c.cache.WaitForCacheSync(ctx) {
		c.running.Store(true)
		close(c.synced)
	}
	defer c.running.Store(false)
	if err := <-errc; err != nil {
		return fmt.Errorf("watch Users: %w", err)
	}
	return nil
}

// WaitForSync waits until Run has filled the cache, or ctx ends first (false).
func (c *Cached) WaitForSync(ctx context.Context) bool {
	select {
	case <-c.synced:
		return true
	case <-ctx.Done():
		return false
	}
}

// GetCached returns the user named username from the cache: what this replica wrote
// when the cache has not caught up with that yet, and what the API server has when
// the cache is not running or cannot tell (a resourceVersion that is no number).
func (c *Cached) GetCached(ctx context.Context, username string) (*portalv1alpha1.User, error) {
	if !c.running.Load() {
		return c.Get(ctx, username)
	}
	// The writes first, the cache second: a write forgotten in between was delivered,
	// so the cache read after holds it (the informer stores before it notifies).
	c.mu.Lock()
	w, pending := c.written[username]
	c.mu.Unlock()
	u := &portalv1alpha1.User{}
	err := c.cache.Get(ctx, client.ObjectKey{Name: username}, u)
	if err != nil && !apierrors.IsNotFound(err) {
		return c.Get(ctx, username)
	}
	found := err == nil
	if pending {
		switch caughtUp, known := w.seenIn(u, found); {
		case !known:
			return c.Get(ctx, username)
		case !caughtUp && w.user == nil:
			return nil, fmt.Errorf("get User %s: deleted by this replica: %w", username, ErrNotFound)
		case !caughtUp:
			return w.user.DeepCopy(), nil
		}
	}
	if !found {
		return nil, wrap(err, "get User "+username)
	}
	return u, nil
}

// seenIn reports whether the cached user (found or not) holds this write or a later
// one, and whether that can be told at all.
func (w written) seenIn(cached *portalv1alpha1.User, found bool) (caughtUp, known bool) {
	if w.user == nil {
		return !found || cached.UID != w.uid, true
	}
	if !found {
		return false, true
	}
	return newerOrSame(cached, w.user)
}

// newerOrSame reports whether a is the version of b or a later one, by their
// resourceVersions: etcd's revisions, one counter for every object, that only grows.
// ok is false when either is no number (another storage), where nothing can be told.
func newerOrSame(a, b *portalv1alpha1.User) (newer, ok bool) {
	ra, errA := strconv.ParseUint(a.ResourceVersion, 10, 64)
	rb, errB := strconv.ParseUint(b.ResourceVersion, 10, 64)
	if errA != nil || errB != nil {
		return false, false
	}
	return ra >= rb, true
}

// delivered forgets the write of this replica the watch has just delivered (or
// overtaken): an added or changed User as new as the one written, or another User
// under the name of one deleted here.
func (c *Cached) delivered(obj any) {
	u, ok := obj.(*portalv1alpha1.User)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	w, pending := c.written[u.Name]
	if !pending {
		return
	}
	if w.user == nil {
		if u.UID != w.uid {
			delete(c.written, u.Name)
		}
		return
	}
	if newer, known := newerOrSame(u, w.user); newer || !known {
		delete(c.written, u.Name)
	}
}

// deleted forgets what this replica wrote to a User whose deletion the watch has just
// delivered: its deletion, or a write the deletion (by whomever) overtook.
func (c *Cached) deleted(obj any) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	u, ok := obj.(*portalv1alpha1.User)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if w, pending := c.written[u.Name]; pending && (w.user == nil && w.uid == u.UID || w.user != nil && w.user.UID == u.UID) {
		delete(c.written, u.Name)
	}
}

// remember notes a write of this replica for GetCached.
func (c *Cached) remember(name string, w written) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.written[name] = w
}

// Create creates u (see Kube.Create) and remembers it.
func (c *Cached) Create(ctx context.Context, u *portalv1alpha1.User, passwordHash string) error {
	if err := c.Kube.Create(ctx, u, passwordHash); err != nil {
		return err
	}
	c.remember(u.Name, written{user: u.DeepCopy()})
	return nil
}

// Update writes u's spec (see Kube.Update) and remembers it.
func (c *Cached) Update(ctx context.Context, u *portalv1alpha1.User) error {
	if err := c.Kube.Update(ctx, u); err != nil {
		return err
	}
	c.remember(u.Name, written{user: u.DeepCopy()})
	return nil
}

// UpdateStatus writes u's status (see Kube.UpdateStatus) and remembers it.
func (c *Cached) UpdateStatus(ctx context.Context, u *portalv1alpha1.User) error {
	if err := c.Kube.UpdateStatus(ctx, u); err != nil {
		return err
	}
	c.remember(u.Name, written{user: u.DeepCopy()})
	return nil
}

// Delete removes u (see Kube.Delete) and remembers that it is gone.
func (c *Cached) Delete(ctx context.Context, u *portalv1alpha1.User) error {
	if err := c.Kube.Delete(ctx, u); err != nil {
		return err
	}
	c.remember(u.Name, written{uid: u.UID})
	return nil
}
