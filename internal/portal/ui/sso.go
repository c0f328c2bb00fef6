package ui

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/url"

	"github.com/gin-gonic/gin"

	"github.com/mooringhq/mooring/internal/portal/models"
	"github.com/mooringhq/mooring/internal/portal/sso"
)

// SSO signs people in through an OpenID Connect provider (sso.Provider).
type SSO interface {
	// Name is the provider's name on the login button.
	Name() string
	Begin(ctx context.Context, next string) (authURL, cookie string, err error)
	Finish(ctx context.Context, cookie string, query url.Values) (sso.Identity, string, error)
}

// SSOAccounts turns a verified identity into a session (services.Users).
type SSOAccounts interface {
	LoginSSO(ctx context.Context, id sso.Identity) (models.TokenResponse, error)
}

// The sign-in flow's cookie: sealed state, PKCE verifier and nonce, sent back only to
// the SSO paths. SameSite=Lax, not Strict: the browser returns from the provider by a
// cross-site navigation, which must carry it.
const (
	ssoCookie     = "mooring_sso"
	ssoCookiePath = Prefix + "/sso"
)

func (u *UI) setSSOCookie(c *gin.Context, value string, maxAge int) {
	http.SetCookie(c.Writer, &http.Cookie{Name: ssoCookie, Value: value, Path: ssoCookiePath, MaxAge: maxAge,
		HttpOnly: true, Secure: u.secure(c), SameSite: http.SameSiteLaxMode})
}

// ssoLogin sends the browser to the provider, keeping the sign-in's secrets in the flow
// cookie. Only a local page may be the destination afterwards.
func (u *UI) ssoLogin(c *gin.Context) {
	authURL, cookie, err := u.o.SSO.Begin(c.Request.Context(), safeNext(c.Query("next")))
	if err != nil {
		u.ssoFailed(c, http.StatusBadGateway, err)
		return
	}
	u.setSSOCookie(c, cookie, int(sso.FlowTTL.Seconds()))
	c.Redirect(http.StatusSeeOther, authURL)
}

// ssoCallback finishes the sign-in the provider sent the browser back from. The flow
// cookie is spent whatever the outcome. The session cookies are SameSite=Strict, which
// a browser withholds on a navigation that a cross-site redirect led to: the answer is
// a page that moves on to the destination by itself, a same-site navigation.
func (u *UI) ssoCallback(c *gin.Context) {
	cookie, _ := c.Cookie(ssoCookie)
	u.setSSOCookie(c, "", -1)
	id, next, err := u.o.SSO.Finish(c.Request.Context(), cookie, c.Request.URL.Query())
	if err != nil {
		u.ssoFailed(c, http.StatusBadRequest, err)
		return
	}
	tok, err := u.o.SSOAccounts.LoginSSO(c.Request.Context(), id)
	if err != nil {
		p := describe(c.Request.Context(), err)
		u.renderLogin(c, p.Status, p.Message, authForm{Next: next})
		return
	}
	u.setSession(c, tok)
	next = safeNext(next)
	u.render(c, http.StatusOK, "signedin", page{Title: "Signed in", Refresh: next, Data: next})
}

// ssoFailed shows why a sign-in failed on the login page, in plain words, and logs the
// cause (which never holds a code or token).
func (u *UI) ssoFailed(c *gin.Context, status int, err error) {
	msg := "Single sign-on failed; try again."
	var se *sso.Error
	if errors.As(err, &se) {
		msg = se.Message
	}
	slog.WarnContext(c.Request.Context(), "Single sign-on failed", "err", err)
	u.renderLogin(c, status, msg, authForm{})
}
