package models

// SSOInfo answers GET /api/v1/sso: how people sign in to this portal.
type SSOInfo struct {
	// Enabled is true when an OpenID Connect provider is configured.
	Enabled bool `json:"enabled"`
	// Provider is the provider's name as the login page shows it.
	Provider string `json:"provider,omitempty"`
	// Issuer is the provider's issuer URL.
	Issuer string `json:"issuer,omitempty"`
	// LoginURL is where a browser starts a sign-in (a page of the web UI); its optional
	// next parameter is a /ui/ page to land on afterwards.
	LoginURL string `json:"loginURL,omitempty"`
	// LocalLogin is true while password logins and registration are accepted.
	LocalLogin bool `json:"localLogin"`
}
