package auth

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
)

// Token types, carried in the "typ" claim so a refresh token is never accepted as an
// access token and the other way round.
const (
	TypeAccess  = "access"
	TypeRefresh = "refresh"
)

// Claims are the portal's token claims.
type Claims struct {
	jwt.RegisteredClaims
	// Type is TypeAccess or TypeRefresh.
	Type string `json:"typ"`
	// Username names the user (the User object), so a request costs one Get.
	Username string `json:"usr"`
	// Generation is the user's token generation when the token was issued; a token
	// whose generation is below the user's current one has been revoked.
	Generation int64 `json:"gen"`
	// Family is the session (login) the token belongs to; a token whose session has
	// ended (logout, reuse of a refresh token, expiry) is refused.
	Family string `json:"fam"`
}

// IssuerOptions configure an Issuer.
type IssuerOptions struct {
	// Issuer and Audience are stamped into and required of every token.
	Issuer, Audience string
	// AccessTTL and RefreshTTL are the lifetimes of the two token types.
	AccessTTL, RefreshTTL time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Issuer signs and verifies tokens with the keys of a Keyring.
type Issuer struct {
	keys *Keyring
	opts IssuerOptions
}

// NewIssuer returns an Issuer signing with keys.
func NewIssuer(keys *Keyring, o IssuerOptions) *Issuer {
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Issuer{keys: keys, opts: o}
}

// AccessTTL is the lifetime of access tokens.
func (i *Issuer) AccessTTL() time.Duration { return i.opts.AccessTTL }

// Pair is an access token and the refresh token that renews it.
type Pair struct {
	Access, Refresh string
	// RefreshID is the refresh token's id (jti), which its session records as the one
	// usable refresh token; RefreshExpiresAt is when the refresh token expires.
	RefreshID        string
	RefreshExpiresAt time.Time
	// AccessTTL is how long the access token lives: the issuer's access lifetime, or
	// less when the session ends sooner.
	AccessTTL time.Duration
}

// Subject is whom tokens are issued to: the user's id and name, its token generation
// and the session (token family) the tokens belong to.
type Subject struct {
	ID, Username string
	Generation   int64
	Family       string
	// NotAfter, when set, is the end of the session: no token issued for it expires
	// later, whatever the token lifetimes.
	NotAfter time.Time
	// RefreshID, when set, is the id (jti) of the refresh token; a random one otherwise.
	RefreshID string
}

// Issue signs a new access and refresh token for sub.
func (i *Issuer) Issue(sub Subject) (Pair, error) {
	access, ac, err := i.sign(sub, TypeAccess, i.opts.AccessTTL, "")
	if err != nil {
		return Pair{}, err
	}
	refresh, claims, err := i.sign(sub, TypeRefresh, i.opts.RefreshTTL, sub.RefreshID)
	if err != nil {
		return Pair{}, err
	}
	return Pair{Access: access, Refresh: refresh, RefreshID: claims.ID, RefreshExpiresAt: claims.ExpiresAt.Time,
		AccessTTL: ac.ExpiresAt.Sub(ac.IssuedAt.Time)}, nil
}

func (i *Issuer) sign(sub Subject, typ string, ttl time.Duration, id string) (string, *Claims, error) {
	if id == "" {
		id = uuid.NewString()
	}
	kid, key, err := i.keys.signing()
	if err != nil {
		return "", nil, err
	}
	now := i.opts.Now()
	exp := now.Add(ttl)
	if !sub.NotAfter.IsZero() && sub.NotAfter.Before(exp) {
		exp = sub.NotAfter // the session's absolute end caps every token of it
	}
	claims := &Claims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    i.opts.Issuer,
			Subject:   sub.ID,
			Audience:  jwt.ClaimStrings{i.opts.Audience},
			ExpiresAt: jwt.NewNumericDate(exp),
			NotBefore: jwt.NewNumericDate(now),
			IssuedAt:  jwt.NewNumericDate(now),
			ID:        id,
		},
		Type:       typ,
		Username:   sub.Username,
		Generation: sub.Generation,
		Family:     sub.Family,
	}
	t := jwt.NewWithClaims(jwt.SigningMethodEdDSA, claims)
	t.Header["kid"] = kid
	s, err := t.SignedString(key)
	if err != nil {
		return "", nil, fmt.Errorf("sign %s token: %w", typ, err)
	}
	return s, claims, nil
}

// ErrInvalidToken wraps every reason a token is refused.
var ErrInvalidToken = errors.New("invalid token")

// Verify checks a token's signature, algorithm, issuer, audience, expiry and type and
// returns its claims. Revocation (the generation) is the caller's to check against the
// user's current state.
func (i *Issuer) Verify(ctx context.Context, token, typ string) (*Claims, error) {
	claims := &Claims{}
	parser := jwt.NewParser(
		jwt.WithValidMethods([]string{jwt.SigningMethodEdDSA.Alg()}),
		jwt.WithIssuer(i.opts.Issuer),
		jwt.WithAudience(i.opts.Audience),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithTimeFunc(i.opts.Now),
	)
	_, err := parser.ParseWithClaims(token, claims, func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		return i.keys.verifying(ctx, kid)
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidToken, err)
	}
	if claims.Type != typ {
		return nil, fmt.Errorf("%w: a %s token where a %s token is needed", ErrInvalidToken, claims.Type, typ)
	}
	if claims.Subject == "" || claims.Username == "" {
		return nil, fmt.Errorf("%w: no subject", ErrInvalidToken)
	}
	if claims.Family == "" || claims.ID == "" {
		return nil, fmt.Errorf("%w: no session or token id", ErrInvalidToken)
	}
	return claims, nil
}
