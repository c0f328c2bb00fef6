package middleware

import (
	"mime"
	"slices"

	"github.com/gin-gonic/gin"
)

// JSONOnly refuses a request body that is not JSON: fail answers 415 unless the body
// is empty or its Content-Type is one of types (parameters such as charset aside).
// Form-encoded and text bodies would otherwise reach handlers that only speak JSON,
// and a browser could send them across sites without a preflight.
func JSONOnly(fail func(c *gin.Context, got string), types ...string) gin.HandlerFunc {
	return func(c *gin.Context) {
		if c.Request.ContentLength == 0 && c.GetHeader("Content-Type") == "" {
			c.Next()
			return
		}
		ct := c.GetHeader("Content-Type")
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || !slices.Contains(types, mt) {
			fail(c, ct)
			c.Abort()
			return
		}
		c.Next()
	}
}
