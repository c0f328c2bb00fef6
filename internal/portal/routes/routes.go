// Package routes maps the portal's paths to their handlers: the API at a glance.
package routes

import (
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/mooringhq/mooring/internal/portal/handlers"
	"github.com/mooringhq/mooring/internal/portal/middleware"
	"github.com/mooringhq/mooring/internal/portal/ratelimit"
	"github.com/mooringhq/mooring/internal/portal/telemetry"
)

// MaxBodyBytes is the largest request body the portal reads (1 MiB).
const MaxBodyBytes = 1 << 20

// Options are what the router is made of.
type Options struct {
	Users     *handlers.Users
	Teams     *handlers.Teams
	Resources *handlers.Resources
	Health    *handlers.Health
	SSO       *handlers.SSO
	// Authenticator resolves bearer tokens.
	Authenticator middleware.Authenticator
	Metrics       *telemetry.Metrics
	// TrustedProxies are the proxies whose X-Forwarded-For is believed; empty trusts none.
	TrustedProxies []string
	// IPLimit limits register, login and refresh per client IP; UserLimit limits the
	// authenticated routes per user.
	IPLimit, UserLimit *ratelimit.Limiter
	// OpenAPI is the API's OpenAPI document in JSON.
	OpenAPI []byte
	// SecureCookies says the portal is reached over HTTPS (behind a TLS-terminating
	// proxy): every answer then asks browsers to keep to HTTPS.
	SecureCookies bool
}

// New returns the portal's router.
func New(o Options) (*gin.Engine, error) {
	r := gin.New()
	// gin trusts every proxy by default; only the configured ones may set the client IP.
	if err := r.SetTrustedProxies(o.TrustedProxies); err != nil {
		return nil, fmt.Errorf("trusted proxies: %w", err)
	}
	r.HandleMethodNotAllowed = true
	r.NoRoute(handlers.NotFound)
	r.NoMethod(handlers.MethodNotAllowed)
	// First, so that every answer carries them: a panic's, a 404's and a 405's too
	// (gin runs the engine's middleware before NoRoute and NoMethod).
	r.Use(middleware.SecurityHeaders(o.SecureCookies))
	r.Use(gin.CustomRecovery(func(c *gin.Context, _ any) {
		handlers.WriteError(c, fmt.Errorf("panic serving %s", c.FullPath()))
	}))
	r.Use(middleware.RequestID(), middleware.Observe(o.Metrics), middleware.BodyLimit(MaxBodyBytes, handlers.TooLarge), middleware.Client())

	r.GET("/ping", o.Health.Ping)
	r.GET("/healthz", o.Health.Healthz)
	r.GET("/readyz", o.Health.Readyz)

	api := r.Group("/api/v1")
	api.GET("/openapi.json", func(c *gin.Context) { c.Data(http.StatusOK, "application/json", o.OpenAPI) })

	perIP := middleware.RateLimit(o.IPLimit, "ip", middleware.ByClientIP, o.Metrics, handlers.TooManyRequests)
	// Bodies are JSON only; a resource's merge patch may say so in its media type.
	jsonBody := middleware.JSONOnly(handlers.UnsupportedMediaType, "application/json")
	patchBody := middleware.JSONOnly(handlers.UnsupportedMediaType, "application/json", "application/merge-patch+json")
	api.POST("/users", perIP, jsonBody, o.Users.Register)
	api.POST("/login", perIP, jsonBody, o.Users.Login)
	api.POST("/token/refresh", perIP, jsonBody, o.Users.Refresh)
	api.GET("/sso", o.SSO.Get)

	authed := api.Group("", middleware.Auth(o.Authenticator, handlers.WriteError),
		middleware.RateLimit(o.UserLimit, "user", middleware.ByUser, o.Metrics, handlers.TooManyRequests),
		middleware.PathParams(handlers.BadPathParam))
	authed.POST("/logout", o.Users.Logout)
	authed.GET("/users/me", o.Users.Me)
	authed.PATCH("/users/me", jsonBody, o.Users.UpdateMe)
	authed.POST("/users/me/logout-all", o.Users.LogoutAll)
	authed.GET("/users", o.Users.List)
	authed.GET("/users/:id", o.Users.Get)
	authed.PATCH("/users/:id", jsonBody, o.Users.Update)
	authed.DELETE("/users/:id", o.Users.Delete)
	authed.POST("/users/:id/unlock", o.Users.Unlock)

	authed.GET("/teams", o.Teams.List)
	authed.POST("/teams", jsonBody, o.Teams.Create)
	authed.GET("/teams/:name", o.Teams.Get)
	authed.PATCH("/teams/:name", jsonBody, o.Teams.Update)
	authed.DELETE("/teams/:name", o.Teams.Delete)

	authed.GET("/namespaces", o.Resources.Namespaces)
	authed.GET("/namespaces/:ns/events", o.Resources.Events)
	authed.GET("/namespaces/:ns/:kind", o.Resources.List)
	authed.POST("/namespaces/:ns/:kind", jsonBody, o.Resources.Create)
	authed.GET("/namespaces/:ns/:kind/:name", o.Resources.Get)
	authed.PUT("/namespaces/:ns/:kind/:name", jsonBody, o.Resources.Update)
	authed.PATCH("/namespaces/:ns/:kind/:name", patchBody, o.Resources.Patch)
	authed.DELETE("/namespaces/:ns/:kind/:name", o.Resources.Delete)
	authed.POST("/namespaces/:ns/backups/:name/run", o.Resources.RunBackup)
	return r, nil
}
