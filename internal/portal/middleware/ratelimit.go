package middleware

import (
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/mooringhq/mooring/internal/portal/ratelimit"
	"github.com/mooringhq/mooring/internal/portal/telemetry"
)

// RateLimit refuses requests over l's limit with 429 and a Retry-After header, and
// sets the RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset headers (IETF
// draft "RateLimit header fields for HTTP") on every answer. name ("ip" or "user")
// labels the metric; key picks the counted key.
func RateLimit(l *ratelimit.Limiter, name string, key func(*gin.Context) string, m *telemetry.Metrics, tooMany func(*gin.Context)) gin.HandlerFunc {
	return func(c *gin.Context) {
		d := l.Allow(name + ":" + key(c))
		reset := strconv.Itoa(int(d.Reset.Seconds()))
		c.Header("RateLimit-Limit", strconv.Itoa(d.Limit))
		c.Header("RateLimit-Remaining", strconv.Itoa(d.Remaining))
		c.Header("RateLimit-Reset", reset)
		if !d.Allowed {
			m.RateLimited.WithLabelValues(name).Inc()
			c.Header("Retry-After", reset)
			tooMany(c)
			c.Abort()
			return
		}
		c.Next()
	}
}

// ByClientIP keys on the client's address: the peer's, or the one a trusted proxy
// reports (gin's ClientIP with the router's explicit trusted proxies).
func ByClientIP(c *gin.Context) string { return c.ClientIP() }

// ByUser keys on the authenticated caller's id; use after Auth.
func ByUser(c *gin.Context) string {
	if caller := Caller(c); caller != nil {
		return caller.User.Spec.ID
	}
	return "ip:" + c.ClientIP()
}
