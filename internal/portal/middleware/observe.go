package middleware

import (
	"log/slog"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
	"go.opentelemetry.io/otel/trace"

	"github.com/mooringhq/mooring/internal/portal/telemetry"
)

// route is the path pattern of the request ("/api/v1/namespaces/:ns/:kind"), or
// "unmatched": raw paths would make unbounded metric labels.
func route(c *gin.Context) string {
	if r := c.FullPath(); r != "" {
		return r
	}
	return "unmatched"
}

// Observe logs every request once it is answered, records its metrics and names its
// trace span after the route.
func Observe(m *telemetry.Metrics) gin.HandlerFunc {
	return func(c *gin.Context) {
		start := time.Now()
		if span := trace.SpanFromContext(c.Request.Context()); span.IsRecording() {
			span.SetName(c.Request.Method + " " + route(c))
		}
		c.Next()
		elapsed := time.Since(start)
		code := strconv.Itoa(c.Writer.Status())
		r := route(c)
		m.Requests.WithLabelValues(r, c.Request.Method, code).Inc()
		m.Duration.WithLabelValues(r, c.Request.Method, code).Observe(elapsed.Seconds())
		// The path is logged without its query: no token or password travels there,
		// and that way none ever reaches a log line.
		slog.InfoContext(c.Request.Context(), "Request",
			"method", c.Request.Method, "route", r, "path", c.Request.URL.Path,
			"status", c.Writer.Status(), "duration_ms", elapsed.Milliseconds(), "client_ip", c.ClientIP())
	}
}
