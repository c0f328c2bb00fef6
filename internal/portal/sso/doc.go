// Package sso signs portal users in through an OpenID Connect provider: the
// authorization code flow with PKCE (S256), state and nonce, whose short-lived secrets
// travel in a sealed cookie, and an ID token verified with the provider's published
// keys (issuer, audience, expiry, nonce). It answers who the person is at the provider
// (Identity); the users service (services.Users.LoginSSO) turns that into a portal
// session. It knows nothing of HTTP frameworks or of the cluster.
package sso
