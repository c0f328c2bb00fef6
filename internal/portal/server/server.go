// Package server assembles the portal from its layers (store, keys, services,
// handlers, routes) for cmd/mooring-portal and for tests that run it in-process.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	portalv1alpha1 "github.com/mooringhq/mooring/api/portal/v1alpha1"
	"github.com/mooringhq/mooring/internal/portal/auth"
	"github.com/mooringhq/mooring/internal/portal/cluster"
	"github.com/mooringhq/mooring/internal/portal/controller"
	"github.com/mooringhq/mooring/internal/portal/handlers"
	"github.com/mooringhq/mooring/internal/portal/models"
	"github.com/mooringhq/mooring/internal/portal/openapi"
	"github.com/mooringhq/mooring/internal/portal/ratelimit"
	"github.com/mooringhq/mooring/internal/portal/routes"
	"github.com/mooringhq/mooring/internal/portal/services"
	"github.com/mooringhq/mooring/internal/portal/sso"
	"github.com/mooringhq/mooring/internal/portal/store"
	"github.com/mooringhq/mooring/internal/portal/telemetry"
	"github.com/mooringhq/mooring/internal/portal/ui"
)

// Scheme knows the kinds the portal reads and writes as itself.
var Scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(portalv1alpha1.AddToScheme(s))
	return s
}()

// DefaultOperatorNamespace is the namespace config/default installs the operator in.
const DefaultOperatorNamespace = "mooring-system"

// Config is everything the portal is configured with (cmd/mooring-portal's flags).
type Config struct {
	// Rest is the portal's own identity in the cluster.
	Rest *rest.Config
	// Namespace holds the password hash Secrets and the signing keys Secret.
	Namespace string
	// UsersNamespace holds the users' ServiceAccount identities.
	UsersNamespace string
	// SigningKeySecret names the Secret of signing keys in Namespace.
	SigningKeySecret string
	// KeyRotation is how old the signing key gets before a new one takes over.
	KeyRotation time.Duration
	// Issuer and Audience of the tokens.
	Issuer, Audience string
	// AccessTTL and RefreshTTL are the token lifetimes.
	AccessTTL, RefreshTTL time.Duration
	// SessionMaxLifetime is the absolute end of a login, however often it refreshes
	// (0: none); cmd/mooring-portal requires it to be at least RefreshTTL.
	SessionMaxLifetime time.Duration
	// RefreshReuseInterval is how long a refresh token spent by a refresh still gets the
	// session's current one, rather than ending the session as a reuse (0: never).
	RefreshReuseInterval time.Duration
	// Now is the clock of tokens and sessions (time.Now when nil), for tests.
	Now func() time.Time
	// IPLimit requests per RateWindow per client IP on register, login and refresh;
	// UserLimit per user on authenticated routes.
	IPLimit, UserLimit int
	RateWindow         time.Duration
	// TrustedProxies may set X-Forwarded-For; none when empty.
	TrustedProxies []string
	// Lockout slows down password guessing.
	Lockout services.LockoutPolicy
	// ProtectedNamespaces are namespaces no user is ever granted, besides the portal's
	// own (Namespace, UsersNamespace), OperatorNamespace and every kube-* namespace.
	ProtectedNamespaces []string
	// OperatorNamespace is where the Mooring operator runs (protected); mooring-system
	// when empty.
	OperatorNamespace string
	// Roles are the ClusterRoles bound for each role.
	Roles services.RoleNames
	// AdminUsername and AdminPassword, when the password is set, create the first admin;
	// registration then refuses AdminUsername, in any case, as reserved.
	AdminUsername, AdminEmail, AdminPassword string
	// LeaderElection makes the replicas elect the one that reconciles bindings.
	LeaderElection bool
	// SecureCookies marks the web UI's cookies Secure and sends Strict-Transport-Security
	// even on plain HTTP requests: the portal serves HTTP behind a TLS-terminating
	// Ingress, so the request alone does not tell. Only a portal reached over plain HTTP
	// (tests, a local developer setup) turns it off.
	SecureCookies bool
	// SSO signs people in through an OpenID Connect provider, when its IssuerURL is set.
	SSO sso.Config
	// SSOHTTPClient talks to the provider (sso.Options.HTTPClient), for tests.
	SSOHTTPClient *http.Client
	// SSOAdminGroup makes members of this group (the groups claim) admins at sign-in.
	SSOAdminGroup string
	// DisableLocalLogin refuses password logins and registration, and hides them.
	DisableLocalLogin bool
}

// Server is an assembled portal.
type Server struct {
	// Handler serves the API, the web UI and the probes: the public listener.
	Handler http.Handler
	// MetricsHandler serves the Prometheus metrics, on a listener of their own so that
	// they are never public (see Serve).
	MetricsHandler http.Handler
	Users          *services.Users
	Keys           *auth.Keyring
	Metrics        *telemetry.Metrics
	// Reconciler configures the bindings reconciler that Serve runs.
	Reconciler controller.Options

	cfg      Config
	draining atomic.Bool
	// closeCache stops the cache of Users (see Close).
	closeCache func()
}

// Close stops what New started beside the handlers: the watch of Users that
// authentication reads. Serve calls it when it returns; a Server whose Handler is
// served otherwise (tests, benchmarks) calls it when done.
func (s *Server) Close() { s.closeCache() }

// New assembles the portal and loads (or creates) its signing keys.
func New(ctx context.Context, cfg Config) (*Server, error) {
	rc := rest.CopyConfig(cfg.Rest)
	if telemetry.TracingEnabled() {
		rc.Wrap(telemetry.WrapTransport)
	}
	c, err := client.New(rc, client.Options{Scheme: Scheme})
	if err != nil {
		return nil, fmt.Errorf("cluster client: %w", err)
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("cluster client: %w", err)
	}
	keys := auth.NewKeyring(c, auth.KeyringOptions{Namespace: cfg.Namespace, Name: cfg.SigningKeySecret,
		RotateAfter: cfg.KeyRotation, Retain: cfg.RefreshTTL + time.Hour})
	if err := keys.Sync(ctx); err != nil {
		return nil, err
	}
	if cfg.OperatorNamespace == "" {
		cfg.OperatorNamespace = DefaultOperatorNamespace
	}
	imp := cluster.NewImpersonator(rc, cfg.UsersNamespace)
	authz := services.NewAuthz(imp)
	protected := services.Protected{Portal: []string{cfg.Namespace, cfg.UsersNamespace},
		Operator: cfg.OperatorNamespace, Listed: cfg.ProtectedNamespaces}
	userStore, closeCache, err := startUserCache(ctx, store.NewKube(c, cfg.Namespace), rc)
	if err != nil {
		return nil, err
	}
	started := false
	defer func() {
		if !started {
			closeCache()
		}
	}()
	uo := services.UsersOptions{
		Store: userStore,
		Issuer: auth.NewIssuer(keys, auth.IssuerOptions{Issuer: cfg.Issuer, Audience: cfg.Audience,
			AccessTTL: cfg.AccessTTL, RefreshTTL: cfg.RefreshTTL, Now: cfg.Now}),
		Impersonator:         imp,
		Bindings:             services.NewBindings(c, imp, cfg.Roles).Protecting(protected),
		Authz:                authz,
		Lockout:              cfg.Lockout,
		SessionMaxLifetime:   cfg.SessionMaxLifetime,
		RefreshReuseInterval: cfg.RefreshReuseInterval,
		Protected:            protected,
		Now:                  cfg.Now,
	}
	if cfg.AdminPassword != "" {
		uo.ReservedUsername = cfg.AdminUsername
	}
	uo.DisableLocalLogin, uo.SSOAdminGroup = cfg.DisableLocalLogin, cfg.SSOAdminGroup
	users := services.NewUsers(uo)
	teams := services.NewTeams(services.TeamsOptions{Store: store.NewKubeTeams(c), Users: uo.Store, Authz: authz,
		Bindings: uo.Bindings, Protected: protected})
	resources := services.NewResources(imp, authz).WithTeams(teams)
	ssoInfo := models.SSOInfo{LocalLogin: !cfg.DisableLocalLogin}
	uio := ui.Options{Accounts: users, Resources: resources, Permissions: ui.RulesReview{Imp: imp}, Objects: ui.Impersonated{Imp: imp}, CSRFKeys: keys,
		SecureCookies: cfg.SecureCookies, DisableLocalLogin: cfg.DisableLocalLogin}
	if cfg.SSO.Enabled() {
		p, err := sso.New(cfg.SSO, sso.Options{HTTPClient: cfg.SSOHTTPClient, Now: cfg.Now})
		if err != nil {
			return nil, err
		}
		uio.SSO, uio.SSOAccounts = p, users
		ssoInfo = models.SSOInfo{Enabled: true, Provider: p.Name(), Issuer: p.Issuer(), LoginURL: ui.Prefix + "/sso/login", LocalLogin: !cfg.DisableLocalLogin}
	} else if cfg.DisableLocalLogin {
		return nil, errors.New("local logins are off and no single sign-on is configured: nobody could log in")
	}
	doc := openapi.JSON()
	metrics := telemetry.NewMetrics()
	s := &Server{Users: users, Keys: keys, Metrics: metrics, cfg: cfg, closeCache: closeCache,
		MetricsHandler: promhttp.HandlerFor(metrics.Registry, promhttp.HandlerOpts{}),
		Reconciler: controller.Options{Rest: rc, Namespace: cfg.Namespace, Impersonator: imp, Roles: cfg.Roles, Protected: protected,
			Scheme: Scheme, LeaderElection: cfg.LeaderElection}}
	health := &handlers.Health{ClusterReachable: func(ctx context.Context) error {
		if s.draining.Load() {
			return errors.New("shutting down")
		}
		_, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err
	}}
	gin.SetMode(gin.ReleaseMode)
	ipLimit, userLimit := ratelimit.New(cfg.IPLimit, cfg.RateWindow, nil), ratelimit.New(cfg.UserLimit, cfg.RateWindow, nil)
	r, err := routes.New(routes.Options{
		Users:          &handlers.Users{Svc: users, Teams: teams},
		Teams:          &handlers.Teams{Svc: teams},
		Resources:      &handlers.Resources{Svc: resources},
		Health:         health,
		SSO:            &handlers.SSO{Info: ssoInfo},
		Authenticator:  users,
		Metrics:        s.Metrics,
		TrustedProxies: cfg.TrustedProxies,
		IPLimit:        ipLimit,
		UserLimit:      userLimit,
		OpenAPI:        doc,
		SecureCookies:  cfg.SecureCookies,
	})
	if err != nil {
		return nil, err
	}
	// The web UI: the same services, limiters and impersonation as the API.
	uio.IPLimit, uio.UserLimit, uio.Metrics, uio.Teams = ipLimit, userLimit, s.Metrics, teams
	if err := ui.Register(r, uio); err != nil {
		return nil, err
	}
	s.Handler = r
	if telemetry.TracingEnabled() {
		s.Handler = telemetry.HTTPHandler(r)
	}
	if cfg.AdminPassword != "" {
		created, err := users.EnsureAdmin(ctx, cfg.AdminUsername, cfg.AdminEmail, strings.TrimSpace(cfg.AdminPassword))
		if err != nil {
			return nil, fmt.Errorf("create the first admin %q: %w", cfg.AdminUsername, err)
		}
		if created {
			slog.InfoContext(ctx, "Created the first admin", "user", cfg.AdminUsername)
		}
	}
	started = true
	return s, nil
}

// Serve serves on addr, and the metrics on metricsAddr ("" serves none), and runs the
// bindings reconciler (on the elected replica) until ctx ends, then shuts down
// gracefully: /readyz turns 503 first so load balancers stop sending, in-flight
// requests get up to grace to finish. The metrics have their own listener, which the
// Service and Ingress in front of the portal do not expose, so that request counts by
// route and rate-limit refusals are not public.
func (s *Server) Serve(ctx context.Context, addr, metricsAddr string, grace time.Duration) error {
	defer s.Close()
	mgr, err := controller.NewManager(s.Reconciler)
	if err != nil {
		return err
	}
	srv := &http.Server{Addr: addr, Handler: s.Handler, ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout: 30 * time.Second, WriteTimeout: 60 * time.Second, IdleTimeout: 2 * time.Minute}
	go s.Keys.Run(ctx, time.Minute)
	errc, mgrDone := make(chan error, 3), make(chan struct{})
	go func() { errc <- srv.ListenAndServe() }()
	var msrv *http.Server
	if metricsAddr != "" {
		msrv = &http.Server{Addr: metricsAddr, Handler: s.MetricsHandler, ReadHeaderTimeout: 10 * time.Second,
			ReadTimeout: 30 * time.Second, WriteTimeout: 60 * time.Second}
		go func() { errc <- fmt.Errorf("metrics: %w", msrv.ListenAndServe()) }()
		slog.InfoContext(ctx, "Serving metrics", "address", metricsAddr)
	}
	go func() {
		defer close(mgrDone)
		if err := mgr.Start(ctx); err != nil {
			errc <- fmt.Errorf("bindings reconciler: %w", err)
		}
	}()
	slog.InfoContext(ctx, "Serving", "address", addr)
	select {
	case err := <-errc:
		return fmt.Errorf("serve %s: %w", addr, err)
	case <-ctx.Done():
	}
	// The reconciler releases its Lease on the way out, so another replica takes over
	// at once rather than after the lease expires.
	defer func() { <-mgrDone }()
	s.draining.Store(true)
	slog.Info("Shutting down", "grace", grace.String())
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shut down: %w", err)
	}
	if msrv != nil {
		if err := msrv.Shutdown(sctx); err != nil {
			return fmt.Errorf("shut down metrics: %w", err)
		}
	}
	slog.Info("Stopped")
	return nil
}

// ReadPasswordFile reads a password from a file (a mounted Secret), if path is set.
func ReadPasswordFile(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return "", nil // the Secret is optional once an admin exists
	}
	if err != nil {
		return "", fmt.Errorf("read admin password file: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}
