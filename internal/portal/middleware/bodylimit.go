package middleware

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

// BodyLimit refuses bodies over max bytes with 413: at once when Content-Length says
// so, otherwise when a handler reads past the limit (see handlers' JSON reading).
func BodyLimit(maxBytes int64, tooLarge func(*gin.Context)) gin.HandlerFunc {
	return func(c *gin.Context) {
		if c.Request.ContentLength > maxBytes {
			tooLarge(c)
			c.Abort()
			return
		}
		if c.Request.Body != nil {
			c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, maxBytes)
		}
		c.Next()
	}
}
