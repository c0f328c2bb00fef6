package middleware

import (
	"context"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/mooringhq/mooring/internal/portal/services"
)

const callerKey = "mooring.caller"

// Authenticator resolves an access token to its caller.
type Authenticator interface {
	Authenticate(ctx context.Context, token string) (*services.Caller, error)
}

// Auth requires a valid "Authorization: Bearer <access token>" and stores the caller
// for the handlers; fail answers when there is none.
func Auth(a Authenticator, fail func(*gin.Context, error)) gin.HandlerFunc {
	return func(c *gin.Context) {
		scheme, token, ok := strings.Cut(c.GetHeader("Authorization"), " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
			c.Header("WWW-Authenticate", `Bearer realm="mooring-portal"`)
			fail(c, &services.Error{Kind: services.KindUnauthorized, Message: "an Authorization: Bearer <access token> header is required"})
			c.Abort()
			return
		}
		caller, err := a.Authenticate(c.Request.Context(), strings.TrimSpace(token))
		if err != nil {
			c.Header("WWW-Authenticate", `Bearer realm="mooring-portal", error="invalid_token"`)
			fail(c, err)
			c.Abort()
			return
		}
		c.Set(callerKey, caller)
		c.Next()
	}
}

// Caller is the authenticated caller of c; nil outside Auth.
func Caller(c *gin.Context) *services.Caller {
	v, _ := c.Get(callerKey)
	caller, _ := v.(*services.Caller)
	return caller
}
