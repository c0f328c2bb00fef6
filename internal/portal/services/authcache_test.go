package services

import (
	"context"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	portalv1alpha1 "github.com/mooringhq/mooring/api/portal/v1alpha1"
	"github.com/mooringhq/mooring/internal/portal/auth"
	"github.com/mooringhq/mooring/internal/portal/cluster"
	"github.com/mooringhq/mooring/internal/portal/store"
)

// laggingStore is a memStore with a cache (store.CachedReader) that holds what it was
// last given by catchUp, as a watch that has not delivered the later writes yet.
type laggingStore struct {
	*memStore
	mu        sync.Mutex
	cached    map[string]*portalv1alpha1.User
	liveReads int
}

var _ store.CachedReader = (*laggingStore)(nil)

func (l *laggingStore) GetCached(_ context.Context, name string) (*portalv1alpha1.User, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	u, ok := l.cached[name]
	if !ok {
		return nil, store.ErrNotFound
	}
	return u.DeepCopy(), nil
}

func (l *laggingStore) Get(ctx context.Context, name string) (*portalv1alpha1.User, error) {
	l.mu.Lock()
	l.liveReads++
	l.mu.Unlock()
	return l.memStore.Get(ctx, name)
}

// catchUp gives the cache what the store holds now.
func (l *laggingStore) catchUp(t *testing.T, name string) {
	t.Helper()
	u, err := l.memStore.Get(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cached[name] = u
}

// TestAuthenticateAsksLiveWhenTheCacheSaysNo: a cache that says yes answers without a
// read of the store; one that has not seen a session yet (a login on another replica)
// or a revocation is asked again of the store, so a lagging cache never refuses a
// good token, and the store's no stands.
func TestAuthenticateAsksLiveWhenTheCacheSaysNo(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	keys := auth.NewKeyring(fake.NewClientBuilder().Build(), auth.KeyringOptions{Namespace: "p", Name: "keys",
		RotateAfter: time.Hour, Retain: 2 * time.Hour})
	if err := keys.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	iss := auth.NewIssuer(keys, auth.IssuerOptions{Issuer: "i", Audience: "a", AccessTTL: time.Minute, RefreshTTL: time.Hour})
	l := &laggingStore{memStore: newMemStore(), cached: map[string]*portalv1alpha1.User{}}
	s := NewUsers(UsersOptions{Store: l, Issuer: iss, Impersonator: cluster.NewImpersonator(&rest.Config{}, "users")})
	if s.cached == nil {
		t.Fatal("a store with a cache: want Authenticate to read through it")
	}
	u := &portalv1alpha1.User{Spec: portalv1alpha1.UserSpec{ID: "id-1", Username: "ann", Role: portalv1alpha1.RoleNone}}
	if err := l.Create(ctx, u, "hash"); err != nil {
		t.Fatal(err)
	}
	login := func(family string) string {
		t.Helper()
		u, err := l.memStore.Get(ctx, "ann")
		if err != nil {
			t.Fatal(err)
		}
		u.Status.Sessions = append(u.Status.Sessions, portalv1alpha1.Session{ID: family, Current: "r", ExpiresAt: metav1.NewTime(now.Add(time.Hour))})
		if err := l.UpdateStatus(ctx, u); err != nil {
			t.Fatal(err)
		}
		pair, err := iss.Issue(auth.Subject{ID: u.Spec.ID, Username: u.Name, Generation: u.Status.TokenGeneration, Family: family})
		if err != nil {
			t.Fatal(err)
		}
		return pair.Access
	}
	authenticate := func(tok string) (ok bool, liveReads int) {
		t.Helper()
		before := l.liveReads
		_, err := s.Authenticate(ctx, tok)
		return err == nil, l.liveReads - before
	}

	// Logged in elsewhere; the cache has not seen the User at all, then not the session.
	first := login("f1")
	if ok, live := authenticate(first); !ok || live != 1 {
		t.Fatalf("a session the cache has not seen: want it accepted after one live read, got %v after %d", ok, live)
	}
	l.catchUp(t, "ann")
	second := login("f2")
	if ok, live := authenticate(second); !ok || live != 1 {
		t.Fatalf("a newer session than the cache's: want it accepted after one live read, got %v after %d", ok, live)
	}
	l.catchUp(t, "ann")
	if ok, live := authenticate(second); !ok || live != 0 {
		t.Fatalf("a session the cache holds: want it accepted from the cache, got %v after %d live reads", ok, live)
	}

	// Revoked: the cache that has caught up says no, and so does the store.
	stored, _ := l.memStore.Get(ctx, "ann")
	stored.Status.TokenGeneration++
	stored.Status.Sessions = nil
	if err := l.UpdateStatus(ctx, stored); err != nil {
		t.Fatal(err)
	}
	l.catchUp(t, "ann")
	if ok, live := authenticate(second); ok || live != 1 {
		t.Fatalf("a revoked token: want it refused after asking the store, got %v after %d live reads", ok, live)
	}
}
