package sso

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// CallbackPath is where the portal serves the provider's redirect back (the web UI's
// callback); the configured redirect URL must end in it.
const CallbackPath = "/ui/sso/callback"

// Config is how the portal talks to its provider (cmd/mooring-portal's --oidc-* flags).
type Config struct {
	// IssuerURL is the provider's issuer; its discovery document is read from
	// <IssuerURL>/.well-known/openid-configuration.
	IssuerURL string
	// ClientID and ClientSecret are the portal's client at the provider. The secret also
	// keys the seal of the flow cookie, so every replica opens what another sealed.
	ClientID, ClientSecret string
	// RedirectURL is the portal's callback as browsers reach it (behind the Ingress):
	// https://<portal host>/ui/sso/callback. It must be registered with the provider.
	RedirectURL string
	// Scopes are asked for besides openid (default: profile, email, groups).
	Scopes []string
	// GroupsClaim names the ID token claim that lists the user's groups.
	GroupsClaim string
	// UsernameClaim names the ID token claim a new account's username comes from;
	// when it is missing, the local part of email, then sub.
	UsernameClaim string
	// ProviderName is shown on the login button ("Sign in with <ProviderName>").
	ProviderName string
}

// DefaultScopes are asked for when Config.Scopes is empty.
var DefaultScopes = []string{"profile", "email", "groups"}

// Enabled reports whether single sign-on is configured at all.
func (c Config) Enabled() bool { return c.IssuerURL != "" }

// Validate refuses a configuration the flow cannot work with, naming the flag.
func (c Config) Validate() error {
	var errs []error
	if u, err := url.Parse(c.IssuerURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		errs = append(errs, fmt.Errorf("--oidc-issuer-url %q: must be an http(s) URL", c.IssuerURL))
	}
	if c.ClientID == "" {
		errs = append(errs, errors.New("--oidc-client-id: required with --oidc-issuer-url"))
	}
	if len(c.ClientSecret) < 16 {
		errs = append(errs, errors.New("--oidc-client-secret-file: required with --oidc-issuer-url, at least 16 characters (it also keys the sign-in cookie's seal)"))
	}
	if u, err := url.Parse(c.RedirectURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Path != CallbackPath {
		errs = append(errs, fmt.Errorf("--oidc-redirect-url %q: must be the portal's own URL ending in %s", c.RedirectURL, CallbackPath))
	}
	if c.GroupsClaim == "" {
		errs = append(errs, errors.New("--oidc-groups-claim: must not be empty"))
	}
	if c.UsernameClaim == "" {
		errs = append(errs, errors.New("--oidc-username-claim: must not be empty"))
	}
	return errors.Join(errs...)
}

// scopes are the scopes of the authorization request: openid first, then the
// configured ones without repeats.
func (c Config) scopes() []string {
	s := c.Scopes
	if len(s) == 0 {
		s = DefaultScopes
	}
	out := []string{"openid"}
	for _, x := range s {
		if x = strings.TrimSpace(x); x != "" && !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}
