package ui

import (
	"net/http"
	"net/url"
	"strings"
	"unicode"

	"github.com/gin-gonic/gin"

	portalv1alpha1 "github.com/mooringhq/mooring/api/portal/v1alpha1"
	"github.com/mooringhq/mooring/internal/portal/models"
	"github.com/mooringhq/mooring/internal/portal/services"
)

// authForm is the data of the login and register pages.
type authForm struct {
	Username, Email, Next string
	Fields                map[string]string
	// SSO is the single sign-on provider's name ("": none); Local shows the password
	// form and the way to register.
	SSO   string
	Local bool
}

// safeNext keeps a post-login redirect on the UI: a path under Prefix, never another host.
func safeNext(next string) string {
	if strings.HasPrefix(next, Prefix+"/") && !strings.HasPrefix(next, "//") && !strings.ContainsAny(next, "\\\r\n") {
		return next
	}
	return Prefix + "/"
}

func (u *UI) loginPage(c *gin.Context) {
	u.renderLogin(c, http.StatusOK, "", authForm{Next: c.Query("next")})
}

// renderLogin renders the login page: the password form while local logins are on, the
// single sign-on button while a provider is configured.
func (u *UI) renderLogin(c *gin.Context, status int, errMsg string, form authForm) {
	form.Local = !u.o.DisableLocalLogin
	if u.o.SSO != nil {
		form.SSO = u.o.SSO.Name()
	}
	u.render(c, status, "login", page{Title: "Log in", Notice: noticeOf(c), Error: errMsg, Data: form})
}

func (u *UI) login(c *gin.Context) {
	form := authForm{Username: c.PostForm("username"), Next: c.PostForm("next")}
	tok, err := u.o.Accounts.Login(c.Request.Context(), models.LoginRequest{Username: form.Username, Password: c.PostForm("password")})
	if err != nil {
		p := describe(c.Request.Context(), err)
		form.Fields = p.Fields
		u.renderLogin(c, p.Status, p.Message, form)
		return
	}
	u.setSession(c, tok)
	c.Redirect(http.StatusSeeOther, safeNext(form.Next))
}

func (u *UI) registerPage(c *gin.Context) {
	if u.o.DisableLocalLogin {
		u.renderLogin(c, http.StatusForbidden, "Registration is turned off on this portal: sign in through single sign-on.", authForm{})
		return
	}
	u.render(c, http.StatusOK, "register", page{Title: "Register", Data: authForm{}})
}

func (u *UI) register(c *gin.Context) {
	form := authForm{Username: c.PostForm("username"), Email: c.PostForm("email")}
	_, err := u.o.Accounts.Register(c.Request.Context(), models.RegisterRequest{Username: form.Username, Email: form.Email, Password: c.PostForm("password")})
	if err != nil {
		p := describe(c.Request.Context(), err)
		form.Fields = p.Fields
		u.render(c, p.Status, "register", page{Title: "Register", Error: p.Message, Data: form})
		return
	}
	c.Redirect(http.StatusSeeOther, Prefix+"/login?notice=registered")
}

// notices are the fixed messages a redirect may ask the next page to show; free text
// never travels in the URL.
var notices = map[string]string{
	"registered":  "Your account is ready. Log in; an admin must grant you a role before you can work in the cluster.",
	"loggedout":   "You are logged out.",
	"password":    "Your password was changed; every session was logged out. Log in with the new password.",
	"everywhere":  "Every session of yours was logged out.",
	"created":     "Created.",
	"updated":     "Saved.",
	"deleted":     "Deleted.",
	"scaled":      "Scaling.",
	"paused":      "Paused: Mooring leaves its children alone until you resume.",
	"resumed":     "Resumed.",
	"backup":      "Backup requested; its status updates below.",
	"email":       "Your email was changed.",
	"granted":     "The user's role was saved.",
	"teamsaved":   "The team was saved; its members' access follows.",
	"teamdeleted": "The team was deleted; its grants are gone.",
	"unlocked":    "The user's failed logins were cleared: every client may log in again.",
}

func noticeOf(c *gin.Context) string { return notices[c.Query("notice")] }

// logout ends the session on the server too, so a copy of its cookies is worth nothing.
func (u *UI) logout(c *gin.Context) {
	err := u.o.Accounts.Logout(c.Request.Context(), caller(c))
	u.clearSession(c)
	if err != nil {
		u.fail(c, err)
		return
	}
	c.Redirect(http.StatusSeeOther, Prefix+"/login?notice=loggedout")
}

// homeData lists the namespaces the user may use.
type homeData struct {
	Namespaces []string
	NoRole     bool
	CanUsers   bool
}

func (u *UI) home(c *gin.Context) {
	cl := caller(c)
	data := homeData{NoRole: cl.User.Spec.Role == "" || cl.User.Spec.Role == portalv1alpha1.RoleNone}
	// A user without a role of its own may still work in its teams' namespaces.
	nl, err := u.o.Resources.Namespaces(c.Request.Context(), cl)
	if err != nil {
		u.fail(c, err)
		return
	}
	data.Namespaces = nl.Items
	if len(data.Namespaces) > 0 {
		data.NoRole = false
	}
	if !data.NoRole {
		acc, err := u.o.Permissions.Access(c.Request.Context(), cl, "default")
		if err != nil {
			u.fail(c, err)
			return
		}
		data.CanUsers = acc.CanUsers("list")
	}
	u.render(c, http.StatusOK, "home", page{Title: "Namespaces", Notice: noticeOf(c), Data: data})
}

type accountData struct {
	Email  string
	Fields map[string]string
	// SSO: the account signs in through single sign-on and has no password to change.
	SSO bool
	// Teams are the teams the user is in (nil when the UI has no teams service).
	Teams []models.TeamMembership
}

func (u *UI) accountPage(c *gin.Context) {
	me := caller(c).User
	data := accountData{Email: me.Spec.Email, SSO: me.Spec.SSO != nil}
	if u.o.Teams != nil {
		teams, err := u.o.Teams.Of(c.Request.Context(), me)
		if err != nil {
			u.fail(c, err)
			return
		}
		data.Teams = teams
	}
	u.render(c, http.StatusOK, "account", page{Title: "Account", Notice: noticeOf(c), Data: data})
}

func (u *UI) changeEmail(c *gin.Context) {
	email := c.PostForm("email")
	if _, err := u.o.Accounts.UpdateMe(c.Request.Context(), caller(c), models.UpdateMeRequest{Email: &email}); err != nil {
		u.accountError(c, err, email)
		return
	}
	c.Redirect(http.StatusSeeOther, Prefix+"/account?notice=email")
}

func (u *UI) changePassword(c *gin.Context) {
	pw, cur := c.PostForm("password"), c.PostForm("currentPassword")
	if _, err := u.o.Accounts.UpdateMe(c.Request.Context(), caller(c), models.UpdateMeRequest{Password: &pw, CurrentPassword: &cur}); err != nil {
		u.accountError(c, err, caller(c).User.Spec.Email)
		return
	}
	// The change revoked every token, this session's too.
	u.clearSession(c)
	c.Redirect(http.StatusSeeOther, Prefix+"/login?notice=password")
}

func (u *UI) accountError(c *gin.Context, err error, email string) {
	p := describe(c.Request.Context(), err)
	u.render(c, p.Status, "account", page{Title: "Account", Error: p.Message,
		Data: accountData{Email: email, Fields: p.Fields, SSO: caller(c).User.Spec.SSO != nil}})
}

func (u *UI) logoutAll(c *gin.Context) {
	if err := u.o.Accounts.LogoutAll(c.Request.Context(), caller(c)); err != nil {
		u.fail(c, err)
		return
	}
	u.clearSession(c)
	c.Redirect(http.StatusSeeOther, Prefix+"/login?notice=everywhere")
}

// usersData is the users page: one page of accounts, editable when RBAC lets the
// caller update users.
type usersData struct {
	Users   []models.User
	CanEdit bool
	// Next is the link to the next page of users ("" on the last page); Continue is
	// this page's token ("" on the first page), which its forms send back so that a
	// refused change shows the same page again.
	Next, Continue string
	Roles          []portalv1alpha1.Role
	// Fields holds the errors of the user whose form failed (by FailedID).
	FailedID string
	Fields   map[string]string
}

func (u *UI) usersPage(c *gin.Context) {
	u.showUsers(c, http.StatusOK, "", "", nil)
}

func (u *UI) showUsers(c *gin.Context, status int, errMsg, failedID string, fields map[string]string) {
	cl := caller(c)
	cont := c.Query("continue")
	if cont == "" && c.Request.Method == http.MethodPost {
		cont = c.PostForm("continue")
	}
	l, err := u.o.Accounts.ListPage(c.Request.Context(), cl, services.Page{Limit: int64(u.o.UsersPageSize), Continue: cont})
	if err != nil {
		u.fail(c, err)
		return
	}
	next := ""
	if l.Metadata.Continue != "" {
		next = Prefix + "/users?" + url.Values{"continue": {l.Metadata.Continue}}.Encode()
	}
	acc, err := u.o.Permissions.Access(c.Request.Context(), cl, "default")
	if err != nil {
		u.fail(c, err)
		return
	}
	u.render(c, status, "users", page{Title: "Users", Notice: noticeOf(c), Error: errMsg, Data: usersData{
		Users: l.Items, Next: next, Continue: cont, CanEdit: acc.CanUsers("update"), Roles: portalv1alpha1.Roles, FailedID: failedID, Fields: fields}})
}

func (u *UI) updateUser(c *gin.Context) {
	role := c.PostForm("role")
	// Namespaces may be separated by commas or any white space.
	namespaces := strings.FieldsFunc(c.PostForm("namespaces"), func(r rune) bool { return r == ',' || unicode.IsSpace(r) })
	if namespaces == nil {
		namespaces = []string{}
	}
	req := models.UpdateUserRequest{Role: &role, Namespaces: &namespaces}
	if _, err := u.o.Accounts.Update(c.Request.Context(), caller(c), c.Param("id"), req); err != nil {
		p := describe(c.Request.Context(), err)
		u.showUsers(c, p.Status, p.Message, c.Param("id"), p.Fields)
		return
	}
	c.Redirect(http.StatusSeeOther, Prefix+"/users?notice=granted")
}

// unlockUser lifts every failed-login lock of a user (an admin's answer to someone
// guessing its password).
func (u *UI) unlockUser(c *gin.Context) {
	if _, err := u.o.Accounts.Unlock(c.Request.Context(), caller(c), c.Param("id")); err != nil {
		p := describe(c.Request.Context(), err)
		u.showUsers(c, p.Status, p.Message, c.Param("id"), p.Fields)
		return
	}
	c.Redirect(http.StatusSeeOther, Prefix+"/users?notice=unlocked")
}
