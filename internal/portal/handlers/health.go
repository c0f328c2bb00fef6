package handlers

import (
	"context"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/mooringhq/mooring/internal/portal/models"
)

// Health serves /ping, /healthz and /readyz.
type Health struct {
	// ClusterReachable reports whether the API server answers.
	ClusterReachable func(ctx context.Context) error
}

// Ping handles GET /ping.
func (h *Health) Ping(c *gin.Context) { c.JSON(http.StatusOK, models.Message{Message: "pong"}) }

// Healthz handles GET /healthz: the process serves.
func (h *Health) Healthz(c *gin.Context) { c.JSON(http.StatusOK, models.Message{Message: "ok"}) }

// Readyz handles GET /readyz: ready only while the cluster is reachable, since no
// request but /ping can be served without it.
func (h *Health) Readyz(c *gin.Context) {
	ctx, cancel := context.WithTimeout(c.Request.Context(), 3*time.Second)
	defer cancel()
	if err := h.ClusterReachable(ctx); err != nil {
		WriteError(c, &requestError{status: http.StatusServiceUnavailable, code: CodeUnavailable, message: "the cluster is not reachable: " + err.Error()})
		return
	}
	c.JSON(http.StatusOK, models.Message{Message: "ready"})
}
