package sso

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// FlowTTL is how long a sign-in may take at the provider: the flow cookie's lifetime.
const FlowTTL = 10 * time.Minute

// Provider runs sign-ins against one OpenID Connect provider. It discovers the
// provider's endpoints and keys on first use (and again after a failed discovery), so
// a provider that is down when the portal starts does not stop the portal.
type Provider struct {
	cfg    Config
	seal   *sealer
	client *http.Client
	now    func() time.Time

	mu       sync.Mutex
	oidc     *oidc.Provider
	verifier *oidc.IDTokenVerifier
}

// Options are the parts of a Provider besides its Config, for tests.
type Options struct {
	// HTTPClient talks to the provider (a client with a 30 s timeout when nil).
	HTTPClient *http.Client
	// Now is the clock of flow expiry and token checks (time.Now when nil).
	Now func() time.Time
}

// New returns a Provider for cfg, which must be valid (Config.Validate).
func New(cfg Config, o Options) (*Provider, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s, err := newSealer(cfg.ClientSecret)
	if err != nil {
		return nil, err
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Timeout: 30 * time.Second}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if cfg.ProviderName == "" {
		cfg.ProviderName = "single sign-on"
	}
	return &Provider{cfg: cfg, seal: s, client: o.HTTPClient, now: o.Now}, nil
}

// Name is the provider's name as the login button shows it.
func (p *Provider) Name() string { return p.cfg.ProviderName }

// Issuer is the configured issuer URL.
func (p *Provider) Issuer() string { return p.cfg.IssuerURL }

func (p *Provider) ctx(ctx context.Context) context.Context { return oidc.ClientContext(ctx, p.client) }

// discover returns the provider's endpoints and ID token verifier, reading the
// discovery document the first time.
func (p *Provider) discover(ctx context.Context) (*oidc.Provider, *oidc.IDTokenVerifier, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.oidc != nil {
		return p.oidc, p.verifier, nil
	}
	op, err := oidc.NewProvider(p.ctx(ctx), p.cfg.IssuerURL)
	if err != nil {
		return nil, nil, fmt.Errorf("discover OpenID Connect provider %s: %w", p.cfg.IssuerURL, err)
	}
	// The verifier checks the signature against the provider's published keys (fetched
	// again when a token names an unknown key), the issuer, that the audience holds
	// this client, and expiry; the nonce is checked in Finish.
	p.oidc, p.verifier = op, op.Verifier(&oidc.Config{ClientID: p.cfg.ClientID, Now: p.now})
	return p.oidc, p.verifier, nil
}

func (p *Provider) oauth2(op *oidc.Provider) *oauth2.Config {
	return &oauth2.Config{ClientID: p.cfg.ClientID, ClientSecret: p.cfg.ClientSecret, Endpoint: op.Endpoint(),
		RedirectURL: p.cfg.RedirectURL, Scopes: p.cfg.scopes()}
}

// Begin starts a sign-in that will land on the local page next: it returns the
// provider's authorization URL to send the browser to, and the sealed flow to keep in
// a cookie until the browser returns.
func (p *Provider) Begin(ctx context.Context, next string) (authURL, cookie string, err error) {
	op, _, err := p.discover(ctx)
	if err != nil {
		return "", "", &Error{Message: "The sign-in provider cannot be reached; try again later.", Err: err}
	}
	f := flow{State: random(), Nonce: random(), Verifier: oauth2.GenerateVerifier(), Next: next,
		Expires: p.now().Add(FlowTTL).Unix()}
	if cookie, err = p.seal.seal(f); err != nil {
		return "", "", err
	}
	authURL = p.oauth2(op).AuthCodeURL(f.State, oauth2.S256ChallengeOption(f.Verifier), oidc.Nonce(f.Nonce))
	return authURL, cookie, nil
}

// Finish completes the sign-in the browser returned from with query (the callback's
// query string), given the sealed flow of its cookie: it checks the state, trades the
// code (with the PKCE verifier) for tokens and verifies the ID token. It returns who
// signed in and the local page the sign-in started from. Every failure is an *Error
// whose Message may be shown to the person as it is.
func (p *Provider) Finish(ctx context.Context, cookie string, query url.Values) (Identity, string, error) {
	if cookie == "" {
		return Identity{}, "", &Error{Message: "The sign-in expired or started in another browser; sign in again.", Err: errBadFlow}
	}
	f, err := p.seal.open(cookie, p.now())
	if err != nil {
		return Identity{}, "", &Error{Message: "The sign-in expired or started in another browser; sign in again.", Err: err}
	}
	if code := query.Get("error"); code != "" {
		return Identity{}, f.Next, &Error{Message: providerMessage(code, query.Get("error_description")),
			Err: fmt.Errorf("provider answered error %q", code)}
	}
	if subtle.ConstantTimeCompare([]byte(query.Get("state")), []byte(f.State)) != 1 {
		return Identity{}, "", &Error{Message: "The sign-in did not match this browser's; sign in again.", Err: errors.New("state mismatch")}
	}
	code := query.Get("code")
	if code == "" {
		return Identity{}, f.Next, &Error{Message: "The provider sent no authorization code; sign in again.", Err: errors.New("no code")}
	}
	op, verifier, err := p.discover(ctx)
	if err != nil {
		return Identity{}, f.Next, &Error{Message: "The sign-in provider cannot be reached; try again later.", Err: err}
	}
	tok, err := p.oauth2(op).Exchange(p.ctx(ctx), code, oauth2.VerifierOption(f.Verifier))
	if err != nil {
		// The error carries the provider's answer (an OAuth error code), never the code.
		return Identity{}, f.Next, &Error{Message: "The provider refused the sign-in (the code was used or expired); sign in again.", Err: fmt.Errorf("exchange the code: %w", err)}
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return Identity{}, f.Next, &Error{Message: "The provider sent no ID token; sign in again.", Err: errors.New("no id_token in the token response")}
	}
	id, err := p.verify(ctx, verifier, raw, f.Nonce, tok.AccessToken)
	if err != nil {
		return Identity{}, f.Next, &Error{Message: "The provider's ID token was not valid; sign in again.", Err: err}
	}
	return id, f.Next, nil
}

// verify checks an ID token (signature, issuer, audience, expiry: the verifier; the
// nonce and, when the token carries one, the access token hash here) and reads who it
// names.
func (p *Provider) verify(ctx context.Context, verifier *oidc.IDTokenVerifier, raw, nonce, accessToken string) (Identity, error) {
	t, err := verifier.Verify(p.ctx(ctx), raw)
	if err != nil {
		return Identity{}, fmt.Errorf("verify the ID token: %w", err)
	}
	if subtle.ConstantTimeCompare([]byte(t.Nonce), []byte(nonce)) != 1 {
		return Identity{}, errors.New("verify the ID token: nonce does not match the sign-in's")
	}
	if t.AccessTokenHash != "" && accessToken != "" {
		if err := t.VerifyAccessToken(accessToken); err != nil {
			return Identity{}, fmt.Errorf("verify the ID token: %w", err)
		}
	}
	var claims map[string]any
	if err := t.Claims(&claims); err != nil {
		return Identity{}, fmt.Errorf("read the ID token's claims: %w", err)
	}
	return identityOf(t.Issuer, t.Subject, claims, p.cfg.UsernameClaim, p.cfg.GroupsClaim)
}

// random is 32 bytes of randomness, URL-safe.
func random() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24)
	return base64.RawURLEncoding.EncodeToString(b)
}

// Error is a failed sign-in: Message is for the person, in plain words (the provider's
// own words only as text), Err for the log; neither carries a code or token.
type Error struct {
	Message string
	Err     error
}

func (e *Error) Error() string { return e.Message + ": " + e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// providerMessage words an error the provider redirected with (RFC 6749 §4.1.2.1),
// keeping its description short and plain.
func providerMessage(code, description string) string {
	msg := "The sign-in provider refused the sign-in (" + truncate(code, 64) + ")"
	if description != "" {
		msg += ": " + truncate(description, 200)
	}
	return msg + "."
}

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
