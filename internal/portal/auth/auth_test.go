package auth

import (
	"context"
	"crypto/ed25519"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

func TestPasswordHash(t *testing.T) {
	h, err := HashPassword(context.Background(), "a long enough password")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(h, "$argon2id$v=19$m=19456,t=2,p=1$") {
		t.Fatalf("want OWASP Argon2id parameters in the hash, got %q", h[:40])
	}
	if _, err := CheckPassword(context.Background(), h, "a long enough password"); err != nil {
		t.Fatalf("the right password: %v", err)
	}
	if _, err := CheckPassword(context.Background(), h, "a long enough passwore"); !errors.Is(err, ErrMismatch) {
		t.Fatalf("a wrong password: want ErrMismatch, got %v", err)
	}
	h2, _ := HashPassword(context.Background(), "a long enough password")
	if h == h2 {
		t.Fatal("two hashes of one password must differ (random salt)")
	}
	if _, err := CheckPassword(context.Background(), "$2a$12$bcrypt", "x"); err == nil {
		t.Fatal("an unknown hash format must be refused")
	}
}

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

// keyringWith returns a Keyring holding keys without a cluster (tests of tokens only;
// Sync against a real API server is tested in internal/portal/server).
func keyringWith(t *testing.T, c *clock, ids ...string) *Keyring {
	t.Helper()
	k := NewKeyring(nil, KeyringOptions{Now: c.now})
	data := map[string][]byte{}
	for _, id := range ids {
		seed, err := newKey()
		if err != nil {
			t.Fatal(err)
		}
		data[id] = seed
	}
	if err := k.load(data); err != nil {
		t.Fatal(err)
	}
	return k
}

func TestTokensAreVerifiedStrictly(t *testing.T) {
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	keys := keyringWith(t, c, "k1799999000-aaaa", "k1799999999-bbbb")
	iss := NewIssuer(keys, IssuerOptions{Issuer: "mooring-portal", Audience: "mooring-portal", AccessTTL: time.Minute, RefreshTTL: time.Hour, Now: c.now})
	sub := Subject{ID: "id-1", Username: "ann", Generation: 3, Family: "fam-1"}
	pair, err := iss.Issue(sub)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	claims, err := iss.Verify(ctx, pair.Access, TypeAccess)
	if err != nil || claims.Subject != "id-1" || claims.Username != "ann" || claims.Generation != 3 || claims.Family != "fam-1" {
		t.Fatalf("a fresh access token: claims %+v, err %v", claims, err)
	}
	rc, err := iss.Verify(ctx, pair.Refresh, TypeRefresh)
	if err != nil || rc.ID != pair.RefreshID || rc.Family != "fam-1" || !rc.ExpiresAt.Equal(pair.RefreshExpiresAt) {
		t.Fatalf("the refresh token must carry the id and expiry its session records: claims %+v, pair %+v, err %v", rc, pair, err)
	}
	if again, _ := iss.Issue(sub); again.RefreshID == pair.RefreshID {
		t.Fatal("two refresh tokens share an id, so a spent one could not be told from the current one")
	}
	noFamily, _ := iss.Issue(Subject{ID: "id-1", Username: "ann", Generation: 3})
	if _, err := iss.Verify(ctx, noFamily.Access, TypeAccess); err == nil {
		t.Fatal("a token of no session was accepted")
	}
	if tok, _, _ := jwt.NewParser().ParseUnverified(pair.Access, &Claims{}); tok.Header["kid"] != "k1799999999-bbbb" {
		t.Fatalf("the newest key must sign, kid %v", tok.Header["kid"])
	}
	if _, err := iss.Verify(ctx, pair.Refresh, TypeAccess); err == nil {
		t.Fatal("a refresh token was accepted as an access token")
	}

	other := NewIssuer(keys, IssuerOptions{Issuer: "someone-else", Audience: "mooring-portal", AccessTTL: time.Minute, Now: c.now})
	foreign, _ := other.Issue(sub)
	if _, err := iss.Verify(ctx, foreign.Access, TypeAccess); err == nil {
		t.Fatal("a token of another issuer was accepted")
	}
	aud := NewIssuer(keys, IssuerOptions{Issuer: "mooring-portal", Audience: "another-api", AccessTTL: time.Minute, Now: c.now})
	wrongAud, _ := aud.Issue(sub)
	if _, err := iss.Verify(ctx, wrongAud.Access, TypeAccess); err == nil {
		t.Fatal("a token for another audience was accepted")
	}
	// "none" and HMAC tokens are refused whatever they claim.
	none := jwt.NewWithClaims(jwt.SigningMethodNone, claims)
	none.Header["kid"] = "k1799999999-bbbb"
	s, _ := none.SignedString(jwt.UnsafeAllowNoneSignatureType)
	if _, err := iss.Verify(ctx, s, TypeAccess); err == nil {
		t.Fatal("an unsigned token was accepted")
	}
	_, forged, _ := ed25519.GenerateKey(nil)
	fake := jwt.NewWithClaims(jwt.SigningMethodEdDSA, claims)
	fake.Header["kid"] = "k1799999999-bbbb"
	s, _ = fake.SignedString(forged)
	if _, err := iss.Verify(ctx, s, TypeAccess); err == nil {
		t.Fatal("a token signed by another key was accepted")
	}

	c.t = c.t.Add(2 * time.Minute)
	if _, err := iss.Verify(ctx, pair.Access, TypeAccess); err == nil {
		t.Fatal("an expired access token was accepted")
	}
	if _, err := iss.Verify(ctx, pair.Refresh, TypeRefresh); err != nil {
		t.Fatalf("the refresh token lives longer: %v", err)
	}
}

func TestKeyIDsSortByTime(t *testing.T) {
	// keyTime orders keys by the time in their id, which rotation relies on.
	if !keyTime("k100-aa").Before(keyTime("k99999-bb")) {
		t.Fatal("key ids must sort by their creation time, not as strings")
	}
}

// TestSessionEndCapsTokenExpiry: a subject's NotAfter (its session's absolute end)
// caps both tokens' expiry and the access lifetime reported; without it the token
// lifetimes apply in full.
func TestSessionEndCapsTokenExpiry(t *testing.T) {
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	iss := NewIssuer(keyringWith(t, c, "k1799999999-bbbb"), IssuerOptions{Issuer: "i", Audience: "a",
		AccessTTL: 15 * time.Minute, RefreshTTL: 24 * time.Hour, Now: c.now})
	tests := map[string]struct {
		notAfter          time.Time
		wantAccess        time.Duration
		wantRefreshExpiry time.Time
	}{
		"no session end":       {wantAccess: 15 * time.Minute, wantRefreshExpiry: c.t.Add(24 * time.Hour)},
		"end after both":       {notAfter: c.t.Add(48 * time.Hour), wantAccess: 15 * time.Minute, wantRefreshExpiry: c.t.Add(24 * time.Hour)},
		"end caps the refresh": {notAfter: c.t.Add(time.Hour), wantAccess: 15 * time.Minute, wantRefreshExpiry: c.t.Add(time.Hour)},
		"end caps both":        {notAfter: c.t.Add(5 * time.Minute), wantAccess: 5 * time.Minute, wantRefreshExpiry: c.t.Add(5 * time.Minute)},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pair, err := iss.Issue(Subject{ID: "id-1", Username: "ann", Family: "fam-1", NotAfter: tc.notAfter})
			if err != nil {
				t.Fatal(err)
			}
			if pair.AccessTTL != tc.wantAccess || !pair.RefreshExpiresAt.Equal(tc.wantRefreshExpiry) {
				t.Fatalf("want access lifetime %s and refresh expiry %s, got %s and %s",
					tc.wantAccess, tc.wantRefreshExpiry, pair.AccessTTL, pair.RefreshExpiresAt)
			}
		})
	}
}
