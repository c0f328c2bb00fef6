// Command mooring-portal serves the Mooring portal, the self-service REST API (see
// internal/portal). It reads its flags, assembles the server and shuts down gracefully
// on SIGTERM or SIGINT.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client/config"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/mooringhq/mooring/api/portal/v1alpha1"
	"github.com/mooringhq/mooring/internal/portal/cluster"
	"github.com/mooringhq/mooring/internal/portal/server"
	"github.com/mooringhq/mooring/internal/portal/services"
	"github.com/mooringhq/mooring/internal/portal/sso"
	"github.com/mooringhq/mooring/internal/portal/telemetry"
	"github.com/mooringhq/mooring/internal/version"
)

func main() {
	if err := run(); err != nil {
		slog.Error("Portal failed", "err", err)
		os.Exit(1)
	}
}

// options are the portal's flags.
type options struct {
	cfg                                   server.Config
	addr, metricsAddr, proxies, protected string
	adminPasswordFile, logLevel           string
	oidcSecretFile, oidcScopes            string
	localLogin                            bool
	adminRole, developerRole, auditorRole string
	lockoutThreshold                      int
	grace                                 time.Duration
	printVersion                          bool
}

// register defines the flags on fs; ns is the default --namespace.
func (o *options) register(fs *flag.FlagSet, ns string) {
	fs.StringVar(&o.addr, "bind-address", ":8080", "Address to serve the API, the web UI and the probes on.")
	// Metrics name routes and count refusals: not for the public listener.
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", "", "Address to serve the Prometheus metrics on, apart from the public listener (config/portal: :9090); empty serves none.")
	fs.StringVar(&o.cfg.OperatorNamespace, "operator-namespace", server.DefaultOperatorNamespace, "Namespace of the Mooring operator; never granted to users.")
	fs.StringVar(&o.protected, "protected-namespaces", "", "Comma-separated namespaces never granted to users, besides the portal's own, the operator's and kube-*.")
	fs.StringVar(&o.cfg.Namespace, "namespace", ns, "Namespace of the password hash Secrets and the signing keys Secret (default $POD_NAMESPACE).")
	fs.StringVar(&o.cfg.UsersNamespace, "users-namespace", cluster.DefaultUsersNamespace, "Namespace of the ServiceAccount identities the portal impersonates for users.")
	fs.StringVar(&o.cfg.SigningKeySecret, "signing-key-secret", "mooring-portal-signing-keys", "Secret holding the token signing keys, shared by all replicas.")
	fs.DurationVar(&o.cfg.KeyRotation, "signing-key-rotation", 7*24*time.Hour, "Age at which a new signing key takes over; older keys keep verifying until their tokens expired.")
	fs.StringVar(&o.cfg.Issuer, "token-issuer", "mooring-portal", "Issuer (iss) of the tokens.")
	fs.StringVar(&o.cfg.Audience, "token-audience", "mooring-portal", "Audience (aud) of the tokens.")
	fs.DurationVar(&o.cfg.AccessTTL, "access-token-ttl", 15*time.Minute, "Lifetime of access tokens.")
	fs.DurationVar(&o.cfg.RefreshTTL, "refresh-token-ttl", 24*time.Hour, "Lifetime of refresh tokens.")
	// A week: a user of the portal logs in once per working week, not once per refresh
	// token (the idle timeout above), while a stolen token family dies within days even
	// if its thief keeps refreshing. OWASP leaves the value to the application's risk;
	// seven days sits between the refresh lifetime it must not undercut and the 30 days
	// IdentityServer uses for its absolute refresh token lifetime.
	fs.DurationVar(&o.cfg.SessionMaxLifetime, "session-max-lifetime", 7*24*time.Hour, "Absolute lifetime of a login: refreshes never extend a session past it, the user logs in again. At least --refresh-token-ttl.")
	// Dex's default: long enough for two browser tabs, or a retry, refreshing with one
	// token at once; short for a thief racing the rightful holder.
	fs.DurationVar(&o.cfg.RefreshReuseInterval, "refresh-token-reuse-interval", 3*time.Second, "How long after a refresh the refresh token it spent still works, answering with the session's current one, instead of ending the session as a reuse. 0 makes every spent token end its session.")
	fs.IntVar(&o.cfg.IPLimit, "ip-rate-limit", 20, "Requests per window per client IP on register, login and refresh.")
	fs.IntVar(&o.cfg.UserLimit, "user-rate-limit", 300, "Requests per window per user on authenticated routes.")
	fs.DurationVar(&o.cfg.RateWindow, "rate-limit-window", time.Minute, "Length of the sliding rate-limit window.")
	fs.StringVar(&o.proxies, "trusted-proxies", "", "Comma-separated IPs or CIDRs of proxies whose X-Forwarded-For is believed; none by default.")
	fs.IntVar(&o.lockoutThreshold, "lockout-threshold", 5, "Failed logins in a row after which an account is locked for a while.")
	fs.DurationVar(&o.cfg.Lockout.Base, "lockout-duration", 30*time.Second, "First lock duration; it doubles with every further failure.")
	fs.DurationVar(&o.cfg.Lockout.Max, "lockout-max-duration", 15*time.Minute, "Longest lock duration.")
	fs.StringVar(&o.adminRole, "admin-clusterrole", services.DefaultRoleNames[v1alpha1.RoleAdmin], "ClusterRole bound to admins.")
	fs.StringVar(&o.developerRole, "developer-clusterrole", services.DefaultRoleNames[v1alpha1.RoleDeveloper], "ClusterRole bound to developers in their namespaces.")
	fs.StringVar(&o.auditorRole, "auditor-clusterrole", services.DefaultRoleNames[v1alpha1.RoleAuditor], "ClusterRole bound to auditors.")
	fs.StringVar(&o.cfg.AdminUsername, "admin-username", "admin", "Username of the first admin, created when --admin-password-file is set and no such user exists; then nobody may register it.")
	fs.StringVar(&o.cfg.AdminEmail, "admin-email", "admin@mooring.local", "E-mail of the first admin.")
	fs.StringVar(&o.adminPasswordFile, "admin-password-file", "", "File (e.g. a mounted Secret) with the first admin's password.")
	fs.DurationVar(&o.grace, "shutdown-grace", 20*time.Second, "How long in-flight requests may take after SIGTERM.")
	fs.StringVar(&o.logLevel, "log-level", "info", "Log level: debug, info, warn or error.")
	fs.BoolVar(&o.cfg.LeaderElection, "leader-elect", true, "Elect one replica to reconcile users' bindings (a Lease in --namespace).")
	// The portal serves plain HTTP behind a TLS-terminating Ingress, so it cannot tell
	// from a request that the browser reached it over HTTPS.
	fs.BoolVar(&o.cfg.SecureCookies, "secure-cookies", true, "Mark the web UI's cookies Secure and send Strict-Transport-Security, even on plain HTTP requests (the portal behind a TLS-terminating Ingress). Turn off only when browsers reach the portal over plain HTTP.")
	fs.StringVar(&o.cfg.SSO.IssuerURL, "oidc-issuer-url", "", "Issuer URL of the OpenID Connect provider people sign in through (single sign-on); empty turns it off.")
	fs.StringVar(&o.cfg.SSO.ClientID, "oidc-client-id", "", "The portal's client id at the OpenID Connect provider.")
	fs.StringVar(&o.oidcSecretFile, "oidc-client-secret-file", "", "File (e.g. a mounted Secret) with the portal's client secret at the provider; it also keys the seal of the sign-in cookie.")
	fs.StringVar(&o.cfg.SSO.RedirectURL, "oidc-redirect-url", "", "The portal's callback as browsers reach it, registered with the provider: https://<portal host>/ui/sso/callback.")
	fs.StringVar(&o.oidcScopes, "oidc-scopes", strings.Join(sso.DefaultScopes, ","), "Comma-separated scopes asked for besides openid.")
	fs.StringVar(&o.cfg.SSO.GroupsClaim, "oidc-groups-claim", "groups", "ID token claim listing the user's groups, stored in the User's status.groups at each sign-in.")
	fs.StringVar(&o.cfg.SSO.UsernameClaim, "oidc-username-claim", "preferred_username", "ID token claim a new account's username is made from (then the e-mail's local part, then sub); made a valid, unique username.")
	fs.StringVar(&o.cfg.SSO.ProviderName, "oidc-provider-name", "single sign-on", "Provider name on the login page's button: \"Sign in with <name>\".")
	fs.StringVar(&o.cfg.SSOAdminGroup, "oidc-admin-group", "", "Members of this group (groups claim) are made admins when they sign in; how the first admin comes when --local-login=false.")
	fs.BoolVar(&o.localLogin, "local-login", true, "Accept password logins and self-registration; false leaves single sign-on only.")
	fs.BoolVar(&o.printVersion, "version", false, "Print the version and exit.")
}

func run() error {
	ns := os.Getenv("POD_NAMESPACE")
	if ns == "" {
		ns = "mooring-portal"
	}
	f := &options{}
	f.register(flag.CommandLine, ns)
	flag.Parse()
	if f.printVersion {
		version.Print(os.Stdout, "mooring-portal")
		return nil
	}

	var level slog.Level
	if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	slog.SetDefault(telemetry.NewLogger(os.Stderr, level))
	ctrllog.SetLogger(logr.FromSlogHandler(slog.Default().Handler()))
	build := version.Get()
	slog.Info("Mooring portal", "version", build.Version, "revision", build.Revision, "goVersion", build.GoVersion)
	if err := checkSessionLifetime(f.cfg.SessionMaxLifetime, f.cfg.RefreshTTL); err != nil {
		return err
	}
	f.cfg.Lockout.Threshold = int32(f.lockoutThreshold)
	f.cfg.Roles = services.RoleNames{v1alpha1.RoleAdmin: f.adminRole, v1alpha1.RoleDeveloper: f.developerRole, v1alpha1.RoleAuditor: f.auditorRole}
	for _, p := range strings.Split(f.proxies, ",") {
		if p = strings.TrimSpace(p); p != "" {
			f.cfg.TrustedProxies = append(f.cfg.TrustedProxies, p)
		}
	}
	for _, ns := range strings.Split(f.protected, ",") {
		if ns = strings.TrimSpace(ns); ns != "" {
			f.cfg.ProtectedNamespaces = append(f.cfg.ProtectedNamespaces, ns)
		}
	}
	var err error
	if f.cfg.AdminPassword, err = server.ReadPasswordFile(f.adminPasswordFile); err != nil {
		return err
	}
	if err := f.ssoConfig(); err != nil {
		return err
	}
	if f.cfg.Rest, err = config.GetConfig(); err != nil {
		return fmt.Errorf("cluster config: %w", err)
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	shutdownTracing, err := telemetry.StartTracing(ctx, "mooring-portal")
	if err != nil {
		return err
	}
	defer func() { _ = shutdownTracing(context.Background()) }()

	startCtx, cancel := context.WithTimeout(ctx, time.Minute)
	s, err := server.New(startCtx, f.cfg)
	cancel()
	if err != nil {
		return err
	}
	return s.Serve(ctx, f.addr, f.metricsAddr, f.grace)
}

// checkSessionLifetime refuses a maximum session lifetime shorter than the refresh
// token lifetime: it would silently cut every session's first refresh token short, so
// --refresh-token-ttl would no longer mean what it says.
func checkSessionLifetime(maxLifetime, refreshTTL time.Duration) error {
	if maxLifetime < refreshTTL {
		return fmt.Errorf("--session-max-lifetime (%s) must be at least --refresh-token-ttl (%s)", maxLifetime, refreshTTL)
	}
	return nil
}

// ssoConfig completes the single sign-on configuration from the flags: the client
// secret from its file, the scopes from their list, and local logins on or off.
func (o *options) ssoConfig() error {
	o.cfg.DisableLocalLogin = !o.localLogin
	for _, sc := range strings.Split(o.oidcScopes, ",") {
		if sc = strings.TrimSpace(sc); sc != "" {
			o.cfg.SSO.Scopes = append(o.cfg.SSO.Scopes, sc)
		}
	}
	if !o.cfg.SSO.Enabled() {
		if !o.localLogin {
			return errors.New("--local-login=false needs --oidc-issuer-url: nobody could log in")
		}
		return nil
	}
	if o.oidcSecretFile == "" {
		return errors.New("--oidc-client-secret-file: required with --oidc-issuer-url")
	}
	b, err := os.ReadFile(o.oidcSecretFile)
	if err != nil {
		return fmt.Errorf("--oidc-client-secret-file: %w", err)
	}
	o.cfg.SSO.ClientSecret = strings.TrimSpace(string(b))
	return o.cfg.SSO.Validate()
}
