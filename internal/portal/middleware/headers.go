package middleware

import "github.com/gin-gonic/gin"

// APIHeaders sets the headers every API answer carries: no caching (answers hold
// tokens and per-user data, which no shared cache or browser history may keep) and no
// content sniffing (a JSON body is never run as a script or page).
func APIHeaders() gin.HandlerFunc {
	return func(c *gin.Context) {
		h := c.Writer.Header()
		h.Set("Cache-Control", "no-store")
		h.Set("X-Content-Type-Options", "nosniff")
		c.Next()
	}
}
