package middleware

import (
	"regexp"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/mooringhq/mooring/internal/portal/telemetry"
)

// RequestIDHeader carries the request id in and out.
const RequestIDHeader = "X-Request-ID"

// A client's id is kept only when it is short and plain, so it cannot forge log lines.
var plainID = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

// RequestID takes the client's X-Request-ID or makes one, returns it in the response
// and puts it into the request's context for the logs.
func RequestID() gin.HandlerFunc {
	return func(c *gin.Context) {
		id := c.GetHeader(RequestIDHeader)
		if !plainID.MatchString(id) {
			id = uuid.NewString()
		}
		c.Header(RequestIDHeader, id)
		c.Request = c.Request.WithContext(telemetry.WithRequestID(c.Request.Context(), id))
		c.Next()
	}
}
