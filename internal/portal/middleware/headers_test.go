package middleware

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gin-gonic/gin"
)

// BenchmarkSecurityHeaders is what the headers add to every request of the portal: a
// route served with and without them
// (go test -run XXX -bench SecurityHeaders -benchmem ./internal/portal/middleware).
func BenchmarkSecurityHeaders(b *testing.B) {
	gin.SetMode(gin.ReleaseMode)
	for name, use := range map[string]bool{"without": false, "with": true} {
		b.Run(name, func(b *testing.B) {
			r := gin.New()
			if use {
				r.Use(SecurityHeaders(true))
			}
			r.GET("/api/v1/namespaces/:ns/:kind", func(c *gin.Context) { c.Status(http.StatusOK) })
			req := httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/team-a/apps", nil)
			w := httptest.NewRecorder()
			b.ReportAllocs()
			for b.Loop() {
				clear(w.Header())
				r.ServeHTTP(w, req)
			}
			if got := w.Header().Get("X-Content-Type-Options") == "nosniff"; got != use {
				b.Fatalf("headers set: %v, want %v", got, use)
			}
		})
	}
}
