package ui

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/mooringhq/mooring/internal/portal/middleware"
	"github.com/mooringhq/mooring/internal/portal/models"
	"github.com/mooringhq/mooring/internal/portal/ratelimit"
	"github.com/mooringhq/mooring/internal/portal/services"
	"github.com/mooringhq/mooring/internal/portal/telemetry"
)

// Prefix is where the UI is served.
const Prefix = "/ui"

//go:embed templates static
var assets embed.FS

// Accounts is what the UI needs of the users service (services.Users).
type Accounts interface {
	Register(ctx context.Context, req models.RegisterRequest) (models.User, error)
	Login(ctx context.Context, req models.LoginRequest) (models.TokenResponse, error)
	Refresh(ctx context.Context, req models.RefreshRequest) (models.TokenResponse, error)
	Authenticate(ctx context.Context, token string) (*services.Caller, error)
	UpdateMe(ctx context.Context, caller *services.Caller, req models.UpdateMeRequest) (models.User, error)
	Logout(ctx context.Context, caller *services.Caller) error
	LogoutAll(ctx context.Context, caller *services.Caller) error
	ListPage(ctx context.Context, caller *services.Caller, page services.Page) (models.UserList, error)
	Update(ctx context.Context, caller *services.Caller, id string, req models.UpdateUserRequest) (models.User, error)
	Unlock(ctx context.Context, caller *services.Caller, id string) (models.User, error)
}

// Resources is what the UI needs of the resources service (services.Resources).
type Resources interface {
	Namespaces(ctx context.Context, caller *services.Caller) (models.NamespaceList, error)
	List(ctx context.Context, caller *services.Caller, namespace, kind string) (*unstructured.UnstructuredList, error)
	Get(ctx context.Context, caller *services.Caller, namespace, kind, name string) (*unstructured.Unstructured, error)
	Create(ctx context.Context, caller *services.Caller, namespace, kind string, body map[string]any) (*unstructured.Unstructured, error)
	Update(ctx context.Context, caller *services.Caller, namespace, kind, name string, body map[string]any) (*unstructured.Unstructured, error)
	Patch(ctx context.Context, caller *services.Caller, namespace, kind, name string, patch []byte) (*unstructured.Unstructured, error)
	Delete(ctx context.Context, caller *services.Caller, namespace, kind, name string) error
	RunBackup(ctx context.Context, caller *services.Caller, namespace, name string) (*unstructured.Unstructured, error)
}

// Permissions tells which controls to show: what the API server's RBAC lets the caller
// do in a namespace. It only hides buttons; every action is still decided by the API
// server when it is made.
type Permissions interface {
	Access(ctx context.Context, caller *services.Caller, namespace string) (Access, error)
}

// CSRFKeys make and check the MACs the forms' CSRF tokens are (auth.Keyring: the
// signing keys, which every replica shares).
type CSRFKeys interface {
	MAC(purpose string, data []byte) ([]byte, error)
	VerifyMAC(ctx context.Context, purpose string, data, mac []byte) bool
}

// Options are the parts the UI works with; Register serves nothing without Accounts,
// Resources, Permissions, Objects and CSRFKeys.
type Options struct {
	Accounts    Accounts
	Resources   Resources
	Permissions Permissions
	// Objects reads an object page's events, children, pods and logs as the caller.
	Objects Objects
	// CSRFKeys derive the forms' CSRF tokens from the session they belong to.
	CSRFKeys CSRFKeys
	// Teams manages teams (the Teams page) and tells a user's teams (the account
	// page); without it neither is shown.
	Teams Teams
	// IPLimit and UserLimit are the API's own limiters, so that the UI and the API share
	// one budget per client IP (log in, register) and per user (everything else).
	IPLimit, UserLimit *ratelimit.Limiter
	Metrics            *telemetry.Metrics
	// SecureCookies marks cookies Secure even on plain HTTP requests, for a portal
	// behind a TLS-terminating proxy, and sends Strict-Transport-Security so browsers
	// keep to HTTPS. Requests that arrive over TLS always get Secure cookies.
	SecureCookies bool
	// UsersPageSize is how many users the users page shows at once, with a link to the
	// next page when there are more (100 when zero).
	UsersPageSize int
	// PollInterval is how often an open page refreshes its status, in milliseconds
	// (3000 when zero).
	PollInterval int
	// Now is the clock ages are shown against (time.Now when nil).
	Now func() time.Time
	// SSO, when set, signs people in through an OpenID Connect provider (the login
	// page's "Sign in with" button), and SSOAccounts gives them their sessions.
	SSO         SSO
	SSOAccounts SSOAccounts
	// DisableLocalLogin hides the password form and the way to register (the services
	// refuse both too).
	DisableLocalLogin bool
}

// UI serves the pages.
type UI struct {
	o     Options
	pages map[string]pageTemplate
}

// Register serves the UI on r under Prefix, and redirects "/" to it.
func Register(r *gin.Engine, o Options) error {
	if o.Accounts == nil || o.Resources == nil || o.Permissions == nil || o.Objects == nil || o.CSRFKeys == nil {
		return fmt.Errorf("ui: Accounts, Resources, Permissions, Objects and CSRFKeys are required")
	}
	if o.SSO != nil && o.SSOAccounts == nil {
		return fmt.Errorf("ui: SSO needs SSOAccounts")
	}
	if o.PollInterval == 0 {
		o.PollInterval = 3000
	}
	if o.UsersPageSize == 0 {
		o.UsersPageSize = 100
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	pages, err := parsePages()
	if err != nil {
		return err
	}
	u := &UI{o: o, pages: pages}
	static, err := fs.Sub(assets, "static")
	if err != nil {
		return fmt.Errorf("ui: static assets: %w", err)
	}

	r.GET("/", func(c *gin.Context) { c.Redirect(http.StatusSeeOther, Prefix+"/") })
	// The engine's middleware.SecurityHeaders gives every answer its headers.
	g := r.Group(Prefix)
	g.StaticFS("/static", http.FS(static))

	perIP := u.rateLimit(o.IPLimit, "ip", middleware.ByClientIP)
	g.GET("/login", u.csrfCookie, u.loginPage)
	g.POST("/login", perIP, u.csrfCookie, u.checkCSRF, u.login)
	g.GET("/register", u.csrfCookie, u.registerPage)
	g.POST("/register", perIP, u.csrfCookie, u.checkCSRF, u.register)
	if o.SSO != nil {
		// No CSRF token: the provider's redirect cannot carry one; the sealed state in
		// the flow cookie is the callback's CSRF check.
		g.GET("/sso/login", perIP, u.ssoLogin)
		g.GET("/sso/callback", perIP, u.csrfCookie, u.ssoCallback)
	}

	a := g.Group("", u.session, u.rateLimit(o.UserLimit, "user", byUser), u.csrfCookie, u.checkCSRF,
		middleware.PathParams(u.badPath))
	a.POST("/logout", u.logout)
	a.GET("/", u.home)
	a.GET("/account", u.accountPage)
	a.POST("/account/email", u.changeEmail)
	a.POST("/account/password", u.changePassword)
	a.POST("/account/logout-all", u.logoutAll)
	a.GET("/users", u.usersPage)
	a.POST("/users/:id", u.updateUser)
	a.POST("/users/:id/unlock", u.unlockUser)
	if o.Teams != nil {
		a.GET("/teams", u.teamsPage)
		a.POST("/teams", u.createTeam)
		a.POST("/teams/:name", u.updateTeam)
		a.POST("/teams/:name/delete", u.deleteTeam)
	}

	a.GET("/ns/:ns", u.namespacePage)
	a.GET("/ns/:ns/:kind/:name", u.objectPage)
	a.GET("/ns/:ns/:kind/new", u.newPage)
	a.POST("/ns/:ns/:kind", u.create)
	a.GET("/ns/:ns/:kind/:name/edit", u.editPage)
	a.POST("/ns/:ns/:kind/:name/edit", u.update)
	a.POST("/ns/:ns/:kind/:name/scale", u.scale)
	a.POST("/ns/:ns/:kind/:name/pause", u.pause(true))
	a.POST("/ns/:ns/:kind/:name/resume", u.pause(false))
	a.GET("/ns/:ns/:kind/:name/delete", u.deletePage)
	a.POST("/ns/:ns/:kind/:name/delete", u.remove)
	a.POST("/ns/:ns/:kind/:name/run", u.runBackup)
	return nil
}

func (u *UI) rateLimit(l *ratelimit.Limiter, name string, key func(*gin.Context) string) gin.HandlerFunc {
	if l == nil {
		return func(c *gin.Context) { c.Next() }
	}
	m := u.o.Metrics
	if m == nil {
		m = telemetry.NewMetrics()
	}
	return middleware.RateLimit(l, name, key, m, func(c *gin.Context) {
		u.render(c, http.StatusTooManyRequests, "error", page{Title: "Slow down",
			Error: "Too many requests. Wait the number of seconds the Retry-After header gives, then try again."})
	})
}
