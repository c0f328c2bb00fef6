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

// reverifyAfter is how long a signature check is kept at most, however long the token
// still lives: a signing key taken out of the keys' Secret by hand stops verifying its
// tokens within this.
const reverifyAfter = time.Minute

// verifiedTokens keeps the claims of access tokens whose signature was checked, by
// the SHA-256 of the token, until they expire or for reverifyAfter, whichever is first: checking an Ed25519 signature was the
// largest CPU cost of an authenticated request left in hack/portalbench, and a client
// sends the same token for many requests. (kube-apiserver's cached token
// authenticator does the same.) Only the signature check is saved: the token's
// holder, generation and session are checked on every request. A token is never in
// here past its expiry, and rotated keys keep verifying longer than that (see
// auth.KeyringOptions.Retain), so a kept token is one the issuer would verify now, but
// for a key removed by hand in the last reverifyAfter.
type verifiedTokens struct {
	mu sync.Mutex
	m  map[[sha256.Size]byte]verifiedToken
}

// verifiedToken is a token's claims and when its signature was checked.
type verifiedToken struct {
	claims *auth.Claims
	at     time.Time
}

// verify returns the claims of the access token, checking its signature with issuer
// unless a check of the same token still holds at now.
func (v *verifiedTokens) verify(ctx context.Context, issuer *auth.Issuer, token string, now time.Time) (*auth.Claims, error) {
	key := sha256.Sum256([]byte(token))
	v.mu.Lock()
	kept, ok := v.m[key]
	v.mu.Unlock()
	if ok && kept.current(now) {
		return kept.claims, nil
	}
	claims, err := issuer.Verify(ctx, token, auth.TypeAccess)
	if err != nil {
		return nil, err
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.m == nil {
		v.m = map[[sha256.Size]byte]verifiedToken{}
	}
	if len(v.m) >= maxVerifiedTokens {
		for k, t := range v.m { // the stale ones, or else an arbitrary one (map order)
			if !t.current(now) || len(v.m) >= maxVerifiedTokens {
				delete(v.m, k)
			}
		}
	}
	v.m[key] = verifiedToken{claims: claims, at: now}
	return claims, nil
}

// current reports whether a check made earlier still holds at now: checked less than
// reverifyAfter ago, and the token issued by now and not expired (the time checks
// Verify makes).
func (t verifiedToken) current(now time.Time) bool {
	c := t.claims
	return now.Sub(t.at) < reverifyAfter && c.ExpiresAt != nil && now.Before(c.ExpiresAt.Time) &&
		(c.IssuedAt == nil || !now.Before(c.IssuedAt.Time))
}
