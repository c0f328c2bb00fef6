package store

import (
	"context"
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	portalv1alpha1 "github.com/mooringhq/mooring/api/portal/v1alpha1"
)

// laggingCache is a cache of Users that holds what the test last gave it, as a watch
// that has not delivered the later writes yet.
type laggingCache struct {
	cache.Cache
	users map[string]*portalv1alpha1.User
}

func (l *laggingCache) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	u, ok := l.users[key.Name]
	if !ok {
		return apierrors.NewNotFound(portalv1alpha1.GroupVersion.WithResource("users").GroupResource(), key.Name)
	}
	u.DeepCopyInto(obj.(*portalv1alpha1.User))
	return nil
}

// newLagging returns a running Cached over an API server stand-in (this tests what
// the cache answers, not the API server) and the lagging cache it reads.
func newLagging(t *testing.T) (*Cached, *laggingCache, client.Client) {
	t.Helper()
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(portalv1alpha1.AddToScheme(s))
	api := fake.NewClientBuilder().WithScheme(s).WithStatusSubresource(&portalv1alpha1.User{}).Build()
	lc := &laggingCache{users: map[string]*portalv1alpha1.User{}}
	c := &Cached{Kube: NewKube(api, "portal"), cache: lc, written: map[string]written{}, synced: make(chan struct{})}
	c.running.Store(true)
	return c, lc, api
}

func TestCachedReadsItsOwnWritesWhileTheCacheLags(t *testing.T) {
	ctx := context.Background()
	c, lc, _ := newLagging(t)
	u := &portalv1alpha1.User{Spec: portalv1alpha1.UserSpec{ID: "id-1", Username: "ann"}}
	if err := c.Create(ctx, u, "hash"); err != nil {
		t.Fatal(err)
	}
	if got, err := c.GetCached(ctx, "ann"); err != nil || got.Spec.ID != "id-1" {
		t.Fatalf("a User created here, not yet in the cache: want it, got %v, %v", got, err)
	}
	lc.users["ann"] = u.DeepCopy() // the watch delivers the creation
	c.delivered(u.DeepCopy())

	// A revocation made here: the cache still holds the User before it.
	before := u.DeepCopy()
	u.Status.TokenGeneration = 1
	if err := c.UpdateStatus(ctx, u); err != nil {
		t.Fatal(err)
	}
	if got, err := c.GetCached(ctx, "ann"); err != nil || got.Status.TokenGeneration != 1 {
		t.Fatalf("a revocation made here: want generation 1 at once, got %v, %v", got, err)
	}
	lc.users["ann"] = before // (still the old one, and the delivery of the creation came late)
	c.delivered(before)
	if got, _ := c.GetCached(ctx, "ann"); got.Status.TokenGeneration != 1 {
		t.Fatalf("an older version delivered after the write: want the write still, got generation %d", got.Status.TokenGeneration)
	}

	// Another replica writes later; once the watch brings that, the cache answers.
	later := u.DeepCopy()
	later.Status.TokenGeneration = 2
	later.ResourceVersion = "99999"
	lc.users["ann"] = later
	if got, _ := c.GetCached(ctx, "ann"); got.Status.TokenGeneration != 2 {
		t.Fatalf("a later version in the cache: want it, got generation %d", got.Status.TokenGeneration)
	}
	c.delivered(later)
	if _, pending := c.written["ann"]; pending {
		t.Fatal("the write stays remembered after the watch delivered a later version")
	}
}

func TestCachedForgetsWhatADeletionEnds(t *testing.T) {
	ctx := context.Background()
	c, lc, _ := newLagging(t)
	u := &portalv1alpha1.User{Spec: portalv1alpha1.UserSpec{ID: "id-2", Username: "bob"}}
	if err := c.Create(ctx, u, "hash"); err != nil {
		t.Fatal(err)
	}
	lc.users["bob"] = u.DeepCopy()
	c.delivered(u.DeepCopy())

	// Deleted here: gone at once, though the cache still has it.
	if err := c.Delete(ctx, u); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetCached(ctx, "bob"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a User deleted here: want ErrNotFound at once, got %v", err)
	}
	delete(lc.users, "bob")
	c.deleted(u.DeepCopy())
	if len(c.written) != 0 {
		t.Fatalf("the deletion stays remembered after the watch delivered it: %v", c.written)
	}

	// Written here, then deleted elsewhere: the delivered deletion ends the write too,
	// so the write is not served for a User that is gone.
	v := &portalv1alpha1.User{Spec: portalv1alpha1.UserSpec{ID: "id-3", Username: "cat"}}
	if err := c.Create(ctx, v, "hash"); err != nil {
		t.Fatal(err)
	}
	c.deleted(v.DeepCopy())
	if _, err := c.GetCached(ctx, "cat"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a User written here and deleted elsewhere: want ErrNotFound, got %v", err)
	}
}

func TestCachedReadsLiveWhenNotRunning(t *testing.T) {
	ctx := context.Background()
	c, _, api := newLagging(t)
	c.running.Store(false)
	u := &portalv1alpha1.User{Spec: portalv1alpha1.UserSpec{ID: "id-4", Username: "dan"}}
	u.Name = "dan"
	if err := api.Create(ctx, u); err != nil { // written by another replica
		t.Fatal(err)
	}
	if got, err := c.GetCached(ctx, "dan"); err != nil || got.Spec.ID != "id-4" {
		t.Fatalf("a cache that is not running: want the API server's User, got %v, %v", got, err)
	}
}
