package ui

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
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
	// csrfHostCookie is the CSRF cookie's name where cookies are Secure.
	csrfHostCookie = "__Host-" + csrfCookie
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

// CSRF tokens are derived from what they protect, so that nobody can plant one: a
// cookie and a form field that merely agree (the double-submit check alone) would pass
// with any value someone who can set a cookie for the portal's host chose.
//
//   - In a session, the token is HMAC(key, the session's id): the session (token
//     family) outlives its refreshes and ends at logout, so the token holds for every
//     page of one login and no other.
//   - Before one (the login and register forms), there is no session to bind to: the
//     token is a random nonce and HMAC(key, nonce), which only the portal can make.
//     Someone could fetch such a pair and plant it, but a post from another site
//     carries its Origin, which is refused.
//
// The key is the signing keys' (CSRFKeys, shared by every replica through their
// Secret). The cookie must equal the field too, and over HTTPS it is named
// __Host-mooring_csrf: browsers then take it only from this host, over HTTPS, for
// the path "/" (RFC 6265bis), so a sibling subdomain cannot set it. Tokens are checked
// in constant time; only UI pages and forms compute one, never an API request.

// csrfPurpose keys the CSRF MACs apart from anything else the keys make.
const csrfPurpose = "ui csrf"

// csrfLen is the length of a session's token: 32 bytes of HMAC-SHA256, base64url.
var csrfLen = base64.RawURLEncoding.EncodedLen(32)

// csrfNonceLen is the length of the nonce of a token made before a session exists.
var csrfNonceLen = base64.RawURLEncoding.EncodedLen(16)

// csrfCookieName is __Host-mooring_csrf where cookies are Secure, else mooring_csrf
// (the prefix demands Secure, so a plain-HTTP portal cannot use it).
func (u *UI) csrfCookieName(c *gin.Context) string {
	if u.secure(c) {
		return csrfHostCookie
	}
	return csrfCookie
}

// csrfBinding is what a token of this request is derived from: the caller's session,
// or "" before one.
func csrfBinding(c *gin.Context) string {
	if cl := caller(c); cl != nil && cl.Session != "" {
		return "session\x00" + cl.Session
	}
	return ""
}

// newCSRF makes a token for binding.
func (u *UI) newCSRF(binding string) (string, error) {
	if binding != "" {
		mac, err := u.o.CSRFKeys.MAC(csrfPurpose, []byte(binding))
		if err != nil {
			return "", err
		}
		return base64.RawURLEncoding.EncodeToString(mac), nil
	}
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	nonce := base64.RawURLEncoding.EncodeToString(b)
	mac, err := u.o.CSRFKeys.MAC(csrfPurpose, []byte("nonce\x00"+nonce))
	if err != nil {
		return "", err
	}
	return nonce + "." + base64.RawURLEncoding.EncodeToString(mac), nil
}

// validCSRF reports whether tok is a token the portal made for binding.
func (u *UI) validCSRF(ctx context.Context, binding, tok string) bool {
	data, macText := []byte(binding), tok
	if binding == "" {
		nonce, m, ok := strings.Cut(tok, ".")
		if !ok || len(nonce) != csrfNonceLen {
			return false
		}
		data, macText = []byte("nonce\x00"+nonce), m
	}
	if len(macText) != csrfLen {
		return false
	}
	mac, err := base64.RawURLEncoding.DecodeString(macText)
	if err != nil {
		return false
	}
	return u.o.CSRFKeys.VerifyMAC(ctx, csrfPurpose, data, mac)
}

// csrfCookie makes sure the browser holds this session's CSRF token (a new one when its
// cookie holds none, or one of another session) and makes it available to templates.
func (u *UI) csrfCookie(c *gin.Context) {
	name, binding := u.csrfCookieName(c), csrfBinding(c)
	tok, err := c.Cookie(name)
	if err != nil || !u.validCSRF(c.Request.Context(), binding, tok) {
		if tok, err = u.newCSRF(binding); err != nil {
			u.fail(c, err)
			c.Abort()
			return
		}
		path := Prefix
		if name == csrfHostCookie {
			path = "/" // the __Host- prefix demands it
		}
		http.SetCookie(c.Writer, &http.Cookie{Name: name, Value: tok, Path: path,
			HttpOnly: true, Secure: u.secure(c), SameSite: http.SameSiteStrictMode})
	}
	c.Set(csrfKey, tok)
	c.Next()
}

// checkCSRF refuses a form post whose csrf field is not this session's token (or,
// before a session, one the portal made), does not equal the cookie, or that names
// another origin. GETs change nothing and pass.
func (u *UI) checkCSRF(c *gin.Context) {
	if c.Request.Method == http.MethodGet || c.Request.Method == http.MethodHead {
		c.Next()
		return
	}
	cookie, err := c.Cookie(u.csrfCookieName(c))
	form := c.PostForm(csrfField)
	ok := err == nil && subtle.ConstantTimeCompare([]byte(cookie), []byte(form)) == 1 && u.validCSRF(c.Request.Context(), csrfBinding(c), form)
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
