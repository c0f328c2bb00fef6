package services

import (
	"context"
	"crypto/sha256"
	"sync"
	"time"

	"github.com/mooringhq/mooring/internal/portal/auth"
)

// maxVerifiedTokens bounds the access tokens whose verified claims Authenticate keeps.
const maxVerifiedTokens = 4096

// verifiedTokens keeps the claims of access tokens whose signature was checked, by
// the SHA-256 of the token, until they expire: checking an Ed25519 signature was the
// largest CPU cost of an authenticated request left in hack/portalbench, and a client
// sends the same token for many requests. (kube-apiserver's cached token
// authenticator does the same.) Only the signature check is saved: the token's
// holder, generation and session are checked on every request. A token is never in
// here past its expiry, and the keys that verified it are kept longer than that (see
// auth.KeyringOptions.Retain), so a kept token is one the issuer would verify now.
type verifiedTokens struct {
	mu sync.Mutex
	m  map[[sha256.Size]byte]*auth.Claims
}

// verify returns the claims of the access token, checking its signature with issuer
// unless a check of the same token still holds at now.
func (v *verifiedTokens) verify(ctx context.Context, issuer *auth.Issuer, token string, now time.Time) (*auth.Claims, error) {
	key := sha256.Sum256([]byte(token))
	v.mu.Lock()
	claims, ok := v.m[key]
	v.mu.Unlock()
	if ok && current(claims, now) {
		return claims, nil
	}
	claims, err := issuer.Verify(ctx, token, auth.TypeAccess)
	if err != nil {
		return nil, err
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.m == nil {
		v.m = map[[sha256.Size]byte]*auth.Claims{}
	}
	if len(v.m) >= maxVerifiedTokens {
		for k, c := range v.m { // the expired ones, or else an arbitrary one (map order)
			if !current(c, now) || len(v.m) >= maxVerifiedTokens {
				delete(v.m, k)
			}
		}
	}
	v.m[key] = claims
	return claims, nil
}

// current reports whether claims verified earlier still hold at now: issued by now
// and not expired (the time checks Verify makes).
func current(c *auth.Claims, now time.Time) bool {
	return c.ExpiresAt != nil && now.Before(c.ExpiresAt.Time) && (c.IssuedAt == nil || !now.Before(c.IssuedAt.Time))
}
