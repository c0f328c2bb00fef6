package services

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/mooringhq/mooring/internal/portal/auth"
)

// TestVerifiedTokensPassOnlyWhatVerifyPasses: a kept check answers for the same token
// only while the issuer would pass it; another token, a changed one, a refresh token
// and an expired one are checked (and refused) as if nothing were kept.
func TestVerifiedTokensPassOnlyWhatVerifyPasses(t *testing.T) {
	ctx := context.Background()
	var ahead atomic.Int64
	start := time.Now()
	now := func() time.Time { return start.Add(time.Duration(ahead.Load())) }
	// The keys' Secret lives in a fake client: this tests tokens, not the cluster.
	keys := auth.NewKeyring(fake.NewClientBuilder().Build(), auth.KeyringOptions{Namespace: "p", Name: "keys",
		RotateAfter: time.Hour, Retain: 2 * time.Hour, Now: now})
	if err := keys.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	iss := auth.NewIssuer(keys, auth.IssuerOptions{Issuer: "i", Audience: "a", AccessTTL: time.Minute, RefreshTTL: time.Hour, Now: now})
	pair, err := iss.Issue(auth.Subject{ID: "id", Username: "u", Generation: 1, Family: "f"})
	if err != nil {
		t.Fatal(err)
	}
	var v verifiedTokens
	first, err := v.verify(ctx, iss, pair.Access, now())
	if err != nil {
		t.Fatal(err)
	}
	if again, err := v.verify(ctx, iss, pair.Access, now()); err != nil || again != first {
		t.Fatalf("the same token again: want the kept claims, got %v, %v", again, err)
	}
	tampered := pair.Access[:len(pair.Access)-2] + "AA"
	if tampered == pair.Access {
		tampered = pair.Access[:len(pair.Access)-2] + "BB"
	}
	for what, tok := range map[string]string{"a changed signature": tampered, "a refresh token": pair.Refresh} {
		if _, err := v.verify(ctx, iss, tok, now()); err == nil {
			t.Fatalf("%s: want it refused", what)
		}
	}
	ahead.Store(int64(time.Minute + time.Second))
	if _, err := v.verify(ctx, iss, pair.Access, now()); err == nil {
		t.Fatal("the token after it expired: want it refused, as Verify refuses it")
	}

	// A long-lived token is checked again after reverifyAfter: a new check, new claims.
	long := auth.NewIssuer(keys, auth.IssuerOptions{Issuer: "i", Audience: "a", AccessTTL: time.Hour, RefreshTTL: time.Hour, Now: now})
	lp, err := long.Issue(auth.Subject{ID: "id", Username: "u", Generation: 1, Family: "f"})
	if err != nil {
		t.Fatal(err)
	}
	c1, err := v.verify(ctx, long, lp.Access, now())
	if err != nil {
		t.Fatal(err)
	}
	ahead.Add(int64(reverifyAfter + time.Second))
	if c2, err := v.verify(ctx, long, lp.Access, now()); err != nil || c2 == c1 {
		t.Fatalf("a check older than %s: want the token checked again, got the kept claims %v, %v", reverifyAfter, c2 == c1, err)
	}
}
