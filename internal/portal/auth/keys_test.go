package auth

import (
	"context"
	"crypto/ed25519"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// TestUnknownKeyIDsDoNotHammerTheAPIServer: tokens naming a key nobody has (forged)
// make the Keyring read its Secret at most once per UnknownKeyResync, however many
// arrive at once; a key another replica adds later is still picked up.
func TestUnknownKeyIDsDoNotHammerTheAPIServer(t *testing.T) {
	var reads, started atomic.Int32
	const requests = 50
	c := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, cl client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			reads.Add(1)
			// A slow API server: the read ends once every request has started.
			for deadline := time.Now().Add(5 * time.Second); started.Load() > 0 && started.Load() < requests && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
			}
			return cl.Get(ctx, key, obj, opts...)
		},
	}).Build()
	clk := &clock{t: time.Now()}
	var mu sync.Mutex
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clk.t }
	k := NewKeyring(c, KeyringOptions{Namespace: "portal", Name: "keys", RotateAfter: 24 * time.Hour, Retain: 48 * time.Hour, Now: now})
	ctx := context.Background()
	if err := k.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	iss := NewIssuer(k, IssuerOptions{Issuer: "mooring-portal", Audience: "mooring-portal", AccessTTL: time.Minute, RefreshTTL: time.Hour, Now: now})
	_, forgedKey, _ := ed25519.GenerateKey(nil)
	forged := jwt.NewWithClaims(jwt.SigningMethodEdDSA, &Claims{Type: TypeAccess, Username: "ann", Family: "f",
		RegisteredClaims: jwt.RegisteredClaims{Subject: "id", ID: "j", Issuer: "mooring-portal", Audience: jwt.ClaimStrings{"mooring-portal"},
			ExpiresAt: jwt.NewNumericDate(now().Add(time.Minute)), IssuedAt: jwt.NewNumericDate(now())}})
	forged.Header["kid"] = "k1-forged"
	token, err := forged.SignedString(forgedKey)
	if err != nil {
		t.Fatal(err)
	}

	mu.Lock()
	clk.t = clk.t.Add(2 * time.Second) // the keys were loaded a while ago
	mu.Unlock()
	before := reads.Load()
	var wg sync.WaitGroup
	for range requests {
		wg.Go(func() {
			started.Add(1)
			if _, err := iss.Verify(ctx, token, TypeAccess); err == nil {
				t.Error("a forged token was accepted")
			}
		})
	}
	wg.Wait()
	if n := reads.Load() - before; n > 1 {
		t.Fatalf("%d tokens at once with an unknown key id read the Secret %d times, want at most 1", requests, n)
	}

	// Later, another replica rotates in a new key: once the interval has passed, a
	// token it signed makes this replica read the Secret again and verifies.
	mu.Lock()
	clk.t = clk.t.Add(UnknownKeyResync + 48*time.Hour)
	mu.Unlock()
	other := NewKeyring(c, KeyringOptions{Namespace: "portal", Name: "keys", RotateAfter: 24 * time.Hour, Retain: 72 * time.Hour, Now: now})
	if err := other.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	fresh, err := NewIssuer(other, IssuerOptions{Issuer: "mooring-portal", Audience: "mooring-portal", AccessTTL: time.Minute, RefreshTTL: time.Hour, Now: now}).
		Issue(Subject{ID: "id", Username: "ann", Family: "f"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := iss.Verify(ctx, fresh.Access, TypeAccess); err != nil {
		t.Fatalf("a token signed with another replica's new key: %v", err)
	}
}
