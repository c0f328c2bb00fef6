package handlers

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/mooringhq/mooring/internal/portal/middleware"
	"github.com/mooringhq/mooring/internal/portal/models"
	"github.com/mooringhq/mooring/internal/portal/services"
)

// Teams serves team management.
type Teams struct {
	Svc *services.Teams
}

// List handles GET /api/v1/teams.
func (h *Teams) List(c *gin.Context) {
	l, err := h.Svc.List(c.Request.Context(), middleware.Caller(c))
	if err != nil {
		WriteError(c, err)
		return
	}
	c.JSON(http.StatusOK, l)
}

// Create handles POST /api/v1/teams.
func (h *Teams) Create(c *gin.Context) {
	var req models.CreateTeamRequest
	if err := bindJSON(c, &req); err != nil {
		WriteError(c, err)
		return
	}
	t, err := h.Svc.Create(c.Request.Context(), middleware.Caller(c), req)
	if err != nil {
		WriteError(c, err)
		return
	}
	c.Header("Location", "/api/v1/teams/"+t.Name)
	c.JSON(http.StatusCreated, t)
}

// Get handles GET /api/v1/teams/{name}.
func (h *Teams) Get(c *gin.Context) {
	t, err := h.Svc.Get(c.Request.Context(), middleware.Caller(c), c.Param("name"))
	if err != nil {
		WriteError(c, err)
		return
	}
	c.JSON(http.StatusOK, t)
}

// Update handles PATCH /api/v1/teams/{name}.
func (h *Teams) Update(c *gin.Context) {
	var req models.UpdateTeamRequest
	if err := bindJSON(c, &req); err != nil {
		WriteError(c, err)
		return
	}
	t, err := h.Svc.Update(c.Request.Context(), middleware.Caller(c), c.Param("name"), req)
	if err != nil {
		WriteError(c, err)
		return
	}
	c.JSON(http.StatusOK, t)
}

// Delete handles DELETE /api/v1/teams/{name}.
func (h *Teams) Delete(c *gin.Context) {
	if err := h.Svc.Delete(c.Request.Context(), middleware.Caller(c), c.Param("name")); err != nil {
		WriteError(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}
