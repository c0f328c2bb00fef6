package ui

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"net/url"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/mooringhq/mooring/internal/portal/models"
	"github.com/mooringhq/mooring/internal/portal/services"
)

// Cookie names. The session is the API's own token pair, so revocation (logout-all, a
// password change, a deleted user) ends a UI session exactly as it ends API access.
const (
	accessCookie  = "mooring_access"
	refreshCookie = "mooring_refresh"
	csrfCookie    = "mooring_csrf"
	// csrfField is the hidden form field that must equal the CSRF cookie.
	csrfField = "csrf"
)

const (
	callerKey = "mooring.ui.caller"
	csrfKey   = "mooring.ui.csrf"
)

// refreshCookieTTL bounds the refresh cookie's life; the token's own expiry still rules.
const refreshCookieTTL = 24 * time.Hour

func (u *UI) secure(c *gin.Context) bool { return u.o.SecureCookies || c.Request.TLS != nil }

func (u *UI) setCookie(c *gin.Context, name, value string, maxAge int) {
	http.SetCookie(c.Writer, &http.Cookie{Name: name, Value: value, Path: Prefix, MaxAge: maxAge,
		HttpOnly: true, Secure: u.secure(c), SameSite: http.SameSiteStrictMode})
}

func (u *UI) setSession(c *gin.Context, tok models.TokenResponse) {
	u.setCookie(c, accessCookie, tok.AccessToken, int(tok.ExpiresIn))
	u.setCookie(c, refreshCookie, tok.RefreshToken, int(refreshCookieTTL.Seconds()))
}

func (u *UI) clearSession(c *gin.Context) {
	u.setCookie(c, accessCookie, "", -1)
	u.setCookie(c, refreshCookie, "", -1)
}

// session requires a logged-in user: the access token of the cookie, or, when it has
// expired, a new pair for the refresh token. Anyone else goes to the login page.
func (u *UI) session(c *gin.Context) {
	ctx := c.Request.Context()
	if tok, err := c.Cookie(accessCookie); err == nil && tok != "" {
		if caller, err := u.o.Accounts.Authenticate(ctx, tok); err == nil {
			c.Set(callerKey, caller)
			c.Next()
			return
		}
	}
	if rt, err := c.Cookie(refreshCookie); err == nil && rt != "" {
		if pair, err := u.o.Accounts.Refresh(ctx, models.RefreshRequest{RefreshToken: rt}); err == nil {
			if caller, err := u.o.Accounts.Authenticate(ctx, pair.AccessToken); err == nil {
				u.setSession(c, pair)
				c.Set(callerKey, caller)
				c.Next()
				return
			}
		}
	}
	u.clearSession(c)
	if c.Request.Method == http.MethodGet && c.GetHeader(liveHeader) == "" {
		c.Redirect(http.StatusSeeOther, Prefix+"/login?next="+url.QueryEscape(c.Request.URL.RequestURI()))
	} else {
		// A form post or a status poll: the page says so rather than losing the input.
		u.render(c, http.StatusUnauthorized, "error", page{Title: "Logged out", Error: "Your session has ended. Log in again."})
	}
	c.Abort()
}

func caller(c *gin.Context) *services.Caller {
	v, _ := c.Get(callerKey)
	cl, _ := v.(*services.Caller)
	return cl
}

// byUser keys the per-user rate limit like the API's ("user:<id>"), so both share it.
func byUser(c *gin.Context) string {
	if cl := caller(c); cl != nil {
		return cl.User.Spec.ID
	}
	return "ip:" + c.ClientIP()
}

// csrfCookie makes sure the browser holds a CSRF token and makes it available to
// templates.
func (u *UI) csrfCookie(c *gin.Context) {
	tok, err := c.Cookie(csrfCookie)
	if err != nil || len(tok) < 32 {
		b := make([]byte, 32)
		if _, err := rand.Read(b); err != nil {
			u.fail(c, err)
			c.Abort()
			return
		}
		tok = base64.RawURLEncoding.EncodeToString(b)
		u.setCookie(c, csrfCookie, tok, 0)
	}
	c.Set(csrfKey, tok)
	c.Next()
}

// checkCSRF refuses a form post whose csrf field does not match the cookie, or that
// names another origin. GETs change nothing and pass.
func (u *UI) checkCSRF(c *gin.Context) {
	if c.Request.Method == http.MethodGet || c.Request.Method == http.MethodHead {
		c.Next()
		return
	}
	cookie, err := c.Cookie(csrfCookie)
	form := c.PostForm(csrfField)
	ok := err == nil && cookie != "" && subtle.ConstantTimeCompare([]byte(cookie), []byte(form)) == 1
	if origin := c.GetHeader("Origin"); ok && origin != "" && origin != "null" {
		if o, err := url.Parse(origin); err != nil || o.Host != c.Request.Host {
			ok = false
		}
	}
	if !ok {
		u.render(c, http.StatusForbidden, "error", page{Title: "Form expired",
			Error: "This form is missing its security token or it has expired. Go back, reload the page and try again."})
		c.Abort()
		return
	}
	c.Next()
}
