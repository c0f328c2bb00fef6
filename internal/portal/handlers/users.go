package handlers

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/mooringhq/mooring/internal/portal/middleware"
	"github.com/mooringhq/mooring/internal/portal/models"
	"github.com/mooringhq/mooring/internal/portal/services"
)

// Users serves registration, login, tokens and user management.
type Users struct {
	Svc *services.Users
	// Teams tells the caller's teams in GET /api/v1/users/me (none when nil).
	Teams *services.Teams
}

// Register handles POST /api/v1/users.
func (h *Users) Register(c *gin.Context) {
	var req models.RegisterRequest
	if err := bindJSON(c, &req); err != nil {
		WriteError(c, err)
		return
	}
	u, err := h.Svc.Register(c.Request.Context(), req)
	if err != nil {
		WriteError(c, err)
		return
	}
	c.Header("Location", "/api/v1/users/"+u.ID)
	c.JSON(http.StatusCreated, u)
}

// Login handles POST /api/v1/login.
func (h *Users) Login(c *gin.Context) {
	var req models.LoginRequest
	if err := bindJSON(c, &req); err != nil {
		WriteError(c, err)
		return
	}
	tok, err := h.Svc.Login(c.Request.Context(), req)
	if err != nil {
		WriteError(c, err)
		return
	}
	c.Header("Cache-Control", "no-store")
	c.JSON(http.StatusOK, tok)
}

// Refresh handles POST /api/v1/token/refresh.
func (h *Users) Refresh(c *gin.Context) {
	var req models.RefreshRequest
	if err := bindJSON(c, &req); err != nil {
		WriteError(c, err)
		return
	}
	tok, err := h.Svc.Refresh(c.Request.Context(), req)
	if err != nil {
		WriteError(c, err)
		return
	}
	c.Header("Cache-Control", "no-store")
	c.JSON(http.StatusOK, tok)
}

// Me handles GET /api/v1/users/me: the caller, with its teams.
func (h *Users) Me(c *gin.Context) {
	u := middleware.Caller(c).User
	m := services.ToModel(u)
	if h.Teams != nil {
		teams, err := h.Teams.Of(c.Request.Context(), u)
		if err != nil {
			WriteError(c, err)
			return
		}
		m.Teams = teams
	}
	c.JSON(http.StatusOK, m)
}

// UpdateMe handles PATCH /api/v1/users/me.
func (h *Users) UpdateMe(c *gin.Context) {
	var req models.UpdateMeRequest
	if err := bindJSON(c, &req); err != nil {
		WriteError(c, err)
		return
	}
	u, err := h.Svc.UpdateMe(c.Request.Context(), middleware.Caller(c), req)
	if err != nil {
		WriteError(c, err)
		return
	}
	c.JSON(http.StatusOK, u)
}

// Logout handles POST /api/v1/logout.
func (h *Users) Logout(c *gin.Context) {
	if err := h.Svc.Logout(c.Request.Context(), middleware.Caller(c)); err != nil {
		WriteError(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

// LogoutAll handles POST /api/v1/users/me/logout-all.
func (h *Users) LogoutAll(c *gin.Context) {
	if err := h.Svc.LogoutAll(c.Request.Context(), middleware.Caller(c)); err != nil {
		WriteError(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

// List handles GET /api/v1/users?limit=&continue=.
func (h *Users) List(c *gin.Context) {
	page, err := pageOf(c)
	if err != nil {
		WriteError(c, err)
		return
	}
	l, err := h.Svc.ListPage(c.Request.Context(), middleware.Caller(c), page)
	if err != nil {
		WriteError(c, err)
		return
	}
	c.JSON(http.StatusOK, l)
}

// Get handles GET /api/v1/users/{id}.
func (h *Users) Get(c *gin.Context) {
	u, err := h.Svc.Get(c.Request.Context(), middleware.Caller(c), c.Param("id"))
	if err != nil {
		WriteError(c, err)
		return
	}
	c.JSON(http.StatusOK, u)
}

// Update handles PATCH /api/v1/users/{id}.
func (h *Users) Update(c *gin.Context) {
	var req models.UpdateUserRequest
	if err := bindJSON(c, &req); err != nil {
		WriteError(c, err)
		return
	}
	u, err := h.Svc.Update(c.Request.Context(), middleware.Caller(c), c.Param("id"), req)
	if err != nil {
		WriteError(c, err)
		return
	}
	c.JSON(http.StatusOK, u)
}

// Delete handles DELETE /api/v1/users/{id}.
func (h *Users) Delete(c *gin.Context) {
	if err := h.Svc.Delete(c.Request.Context(), middleware.Caller(c), c.Param("id")); err != nil {
		WriteError(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

// Unlock handles POST /api/v1/users/{id}/unlock.
func (h *Users) Unlock(c *gin.Context) {
	u, err := h.Svc.Unlock(c.Request.Context(), middleware.Caller(c), c.Param("id"))
	if err != nil {
		WriteError(c, err)
		return
	}
	c.JSON(http.StatusOK, u)
}
