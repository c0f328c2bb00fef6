package middleware

import (
	"github.com/gin-gonic/gin"

	"github.com/mooringhq/mooring/internal/portal/services"
)

// Client puts the request's client address, the one rate limits count (ByClientIP),
// into the request's context, where the users service counts failed logins per
// account and client.
func Client() gin.HandlerFunc {
	return func(c *gin.Context) {
		c.Request = c.Request.WithContext(services.WithClient(c.Request.Context(), ByClientIP(c)))
		c.Next()
	}
}
