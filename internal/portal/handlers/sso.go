package handlers

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/mooringhq/mooring/internal/portal/models"
)

// SSO answers how people sign in: the single sign-on provider, if any, and whether
// password logins are accepted. The sign-in itself runs in the browser, in the web UI.
type SSO struct {
	Info models.SSOInfo
}

// Get answers GET /api/v1/sso.
func (h *SSO) Get(c *gin.Context) { c.JSON(http.StatusOK, h.Info) }
