package handlers

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/mooringhq/mooring/internal/portal/middleware"
	"github.com/mooringhq/mooring/internal/portal/models"
	"github.com/mooringhq/mooring/internal/portal/services"
)

// Resources serves Mooring resources, events and namespaces, acting as the caller.
type Resources struct {
	Svc *services.Resources
}

func (h *Resources) body(c *gin.Context) (map[string]any, bool) {
	data, err := readJSON(c)
	if err != nil {
		WriteError(c, err)
		return nil, false
	}
	var obj map[string]any
	if err := json.Unmarshal(data, &obj); err != nil || obj == nil {
		WriteError(c, badJSON("", "the body must be a Kubernetes object in JSON"))
		return nil, false
	}
	return obj, true
}

func respond(c *gin.Context, status int, obj any, err error) {
	if err != nil {
		WriteError(c, err)
		return
	}
	c.JSON(status, obj)
}

// List handles GET /api/v1/namespaces/{ns}/{kind}?limit=&continue=.
func (h *Resources) List(c *gin.Context) {
	page, err := pageOf(c)
	if err != nil {
		WriteError(c, err)
		return
	}
	l, err := h.Svc.ListPageJSON(c.Request.Context(), middleware.Caller(c), c.Param("ns"), c.Param("kind"), page)
	respondJSON(c, l, err)
}

// respondJSON answers 200 with body, JSON made by the service, or the error.
func respondJSON(c *gin.Context, body []byte, err error) {
	if err != nil {
		WriteError(c, err)
		return
	}
	c.Data(http.StatusOK, "application/json; charset=utf-8", body)
}

// pageOf reads the limit and continue query parameters of a list.
func pageOf(c *gin.Context) (services.Page, error) {
	p := services.Page{Continue: c.Query("continue")}
	if s, ok := c.GetQuery("limit"); ok {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 1 || n > services.MaxPageLimit {
			msg := fmt.Sprintf("must be a whole number from 1 to %d, got %q", services.MaxPageLimit, s)
			return p, &requestError{status: http.StatusBadRequest, code: CodeBadRequest, message: "limit: " + msg,
				fields: []models.FieldError{{Field: "limit", Message: msg}}}
		}
		p.Limit = n
	}
	return p, nil
}

// Create handles POST /api/v1/namespaces/{ns}/{kind}.
func (h *Resources) Create(c *gin.Context) {
	obj, ok := h.body(c)
	if !ok {
		return
	}
	o, err := h.Svc.Create(c.Request.Context(), middleware.Caller(c), c.Param("ns"), c.Param("kind"), obj)
	respond(c, http.StatusCreated, o, err)
}

// Get handles GET /api/v1/namespaces/{ns}/{kind}/{name}.
func (h *Resources) Get(c *gin.Context) {
	o, err := h.Svc.GetJSON(c.Request.Context(), middleware.Caller(c), c.Param("ns"), c.Param("kind"), c.Param("name"))
	respondJSON(c, o, err)
}

// Update handles PUT /api/v1/namespaces/{ns}/{kind}/{name}.
func (h *Resources) Update(c *gin.Context) {
	obj, ok := h.body(c)
	if !ok {
		return
	}
	o, err := h.Svc.Update(c.Request.Context(), middleware.Caller(c), c.Param("ns"), c.Param("kind"), c.Param("name"), obj)
	respond(c, http.StatusOK, o, err)
}

// Patch handles PATCH /api/v1/namespaces/{ns}/{kind}/{name} with a JSON merge patch.
func (h *Resources) Patch(c *gin.Context) {
	data, err := readJSON(c)
	if err != nil {
		WriteError(c, err)
		return
	}
	var probe map[string]any
	if err := json.Unmarshal(data, &probe); err != nil || probe == nil {
		WriteError(c, badJSON("", "the body must be a JSON merge patch (a JSON object)"))
		return
	}
	o, err := h.Svc.Patch(c.Request.Context(), middleware.Caller(c), c.Param("ns"), c.Param("kind"), c.Param("name"), data)
	respond(c, http.StatusOK, o, err)
}

// Delete handles DELETE /api/v1/namespaces/{ns}/{kind}/{name}.
func (h *Resources) Delete(c *gin.Context) {
	if err := h.Svc.Delete(c.Request.Context(), middleware.Caller(c), c.Param("ns"), c.Param("kind"), c.Param("name")); err != nil {
		WriteError(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

// RunBackup handles POST /api/v1/namespaces/{ns}/backups/{name}/run.
func (h *Resources) RunBackup(c *gin.Context) {
	o, err := h.Svc.RunBackup(c.Request.Context(), middleware.Caller(c), c.Param("ns"), c.Param("name"))
	respond(c, http.StatusAccepted, o, err)
}

// Events handles GET /api/v1/namespaces/{ns}/events?limit=&continue=.
func (h *Resources) Events(c *gin.Context) {
	page, err := pageOf(c)
	if err != nil {
		WriteError(c, err)
		return
	}
	l, err := h.Svc.EventsPage(c.Request.Context(), middleware.Caller(c), c.Param("ns"), page)
	respond(c, http.StatusOK, l, err)
}

// Namespaces handles GET /api/v1/namespaces.
func (h *Resources) Namespaces(c *gin.Context) {
	l, err := h.Svc.Namespaces(c.Request.Context(), middleware.Caller(c))
	respond(c, http.StatusOK, l, err)
}
