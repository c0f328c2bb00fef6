// Package ui is the portal's web UI: server-rendered HTML pages on the same origin as
// the API, acting through the same services (and so through impersonation and the API
// server's RBAC) — the UI never has a power the API lacks.
//
// Sessions are the API's own tokens kept in HttpOnly, SameSite=Strict cookies (Secure
// over TLS); every form carries a CSRF token derived from the session (an HMAC of its id
// under the shared signing keys; see session.go), in a hidden field that must also
// match the CSRF cookie; pages are served with a Content-Security-Policy that allows
// scripts only from the portal's origin. Reading works without JavaScript; static/ui.js
// only refreshes the status of the page by polling while it is open.
package ui
