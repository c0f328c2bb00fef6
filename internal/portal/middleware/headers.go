package middleware

import (
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"
)

// contentSecurityPolicy lets the web UI's pages load scripts, styles and images from the
// portal's origin only, post forms only to it, and be framed by nobody; a JSON answer
// opened as a page gets nothing at all.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// hstsValue keeps browsers on HTTPS for a year (RFC 6797). No includeSubDomains: the
// portal does not speak for other hosts of its domain.
const hstsValue = "max-age=31536000"

// StaticPrefix is where the web UI's assets are served: the only answers that may be
// cached.
const StaticPrefix = "/ui/static/"

// SecurityHeaders sets the headers every answer of the portal carries, API and web UI,
// errors and paths no route serves (404, 405) included, which is why it runs first on
// the engine rather than on a group: no caching (answers hold tokens and per-user data,
// which no shared cache or browser history may keep; the UI's static assets aside), no
// content sniffing (a JSON body is never run as a script or page), no framing, the
// Content-Security-Policy, no referrer to other sites, and, where the portal is reached
// over HTTPS (secure, or a TLS connection), HTTPS only from now on.
func SecurityHeaders(secure bool) gin.HandlerFunc {
	return func(c *gin.Context) {
		h := c.Writer.Header()
		// The values are shared slices of one element, so that the headers cost the
		// request no allocation: net/http replaces or appends (which copies a full
		// slice), never writes into them.
		if secure || c.Request.TLS != nil {
			h["Strict-Transport-Security"] = hsts
		}
		h["Content-Security-Policy"] = csp
		h["X-Content-Type-Options"] = nosniff
		h["X-Frame-Options"] = deny
		h["Referrer-Policy"] = sameOrigin
		if (c.Request.Method != http.MethodGet && c.Request.Method != http.MethodHead) || !strings.HasPrefix(c.Request.URL.Path, StaticPrefix) {
			h["Cache-Control"] = noStore
		}
		c.Next()
	}
}

var (
	hsts       = []string{hstsValue}
	csp        = []string{contentSecurityPolicy}
	nosniff    = []string{"nosniff"}
	deny       = []string{"DENY"}
	sameOrigin = []string{"same-origin"}
	noStore    = []string{"no-store"}
)
