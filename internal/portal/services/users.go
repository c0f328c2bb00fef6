package services

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/google/uuid"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"

	portalv1alpha1 "github.com/mooringhq/mooring/api/portal/v1alpha1"
	"github.com/mooringhq/mooring/internal/portal/auth"
	"github.com/mooringhq/mooring/internal/portal/cluster"
	"github.com/mooringhq/mooring/internal/portal/models"
	"github.com/mooringhq/mooring/internal/portal/store"
)

// Caller is the authenticated user of a request, read fresh from the store.
type Caller struct {
	User     *portalv1alpha1.User
	Identity cluster.Identity
	// Session is the session (token family) the caller's access token belongs to; empty
	// when the caller was not authenticated by a token.
	Session string
}

// LockoutPolicy slows down guessing: after Threshold failed logins in a row an account
// is locked for Base, doubling with each further failure up to Max. The state lives in
// the User's status, so every replica enforces the same lock.
type LockoutPolicy struct {
	Threshold int32
	Base, Max time.Duration
}

// lockFor is how long the n-th consecutive failure locks the account (0: not at all).
func (p LockoutPolicy) lockFor(n int32) time.Duration {
	if p.Threshold <= 0 || n < p.Threshold {
		return 0
	}
	d := p.Base
	for i := p.Threshold; i < n && d < p.Max; i++ {
		d *= 2
	}
	return min(d, p.Max)
}

// Users registers, authenticates and manages portal accounts.
type Users struct {
	store store.Users
	// cached reads the User for Authenticate from a watch-fed cache when the store has
	// one (store.CachedReader); nil: from the store.
	cached   func(context.Context, string) (*portalv1alpha1.User, error)
	verified verifiedTokens
	issuer   *auth.Issuer
	imp      *cluster.Impersonator
	bindings *Bindings
	authz    *Authz
	lockout  LockoutPolicy
	// maxSession is the absolute session lifetime (0: none); see UsersOptions.
	maxSession time.Duration
	// reuseInterval is how long a spent refresh token still gets the current one; see
	// UsersOptions.
	reuseInterval time.Duration
	// reserved is the normalized username nobody may register (""; none); see UsersOptions.
	reserved string
	// protected are namespaces nobody is granted; see UsersOptions.
	protected Protected
	// noLocalLogin and adminGroup: see UsersOptions.
	noLocalLogin bool
	adminGroup   string
	now          func() time.Time
}

// UsersOptions are the parts Users works with.
type UsersOptions struct {
	Store        store.Users
	Issuer       *auth.Issuer
	Impersonator *cluster.Impersonator
	Bindings     *Bindings
	Authz        *Authz
	Lockout      LockoutPolicy
	// SessionMaxLifetime is the absolute timeout of a login (OWASP Session Management
	// Cheat Sheet): refreshes never extend a session past its login plus this, however
	// often they come. Zero means no absolute timeout.
	SessionMaxLifetime time.Duration
	// RefreshReuseInterval is how long after a refresh the refresh token it spent still
	// works, answering with the session's current refresh token instead of ending the
	// session as a reuse: two browser tabs, or a client retrying a refresh whose answer
	// it lost, refresh with the same token at once. Zero: a spent token always ends the
	// session. (Dex's reuse interval, 3s by default, is the same idea.)
	RefreshReuseInterval time.Duration
	// ReservedUsername is the first admin's username, which the portal creates itself
	// (EnsureAdmin): registration refuses it, in any case, so that nobody can take the
	// name before the portal creates the admin and hold it as their own account. Empty:
	// no name is reserved (no first admin is configured).
	ReservedUsername string
	// Protected are the namespaces no user may be granted (the portal's, the
	// operator's, kube-* and a configured list).
	Protected Protected
	// DisableLocalLogin refuses password logins and registration: every person signs in
	// through single sign-on (LoginSSO).
	DisableLocalLogin bool
	// SSOAdminGroup, when set, makes every single sign-on account whose groups claim
	// holds it an admin at its login (the first admin when local logins are off).
	SSOAdminGroup string
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// NewUsers returns the users service.
func NewUsers(o UsersOptions) *Users {
	if o.Now == nil {
		o.Now = time.Now
	}
	s := &Users{store: o.Store, issuer: o.Issuer, imp: o.Impersonator, bindings: o.Bindings,
		authz: o.Authz, lockout: o.Lockout, maxSession: o.SessionMaxLifetime, reuseInterval: o.RefreshReuseInterval,
		reserved: normalizeUsername(o.ReservedUsername), protected: o.Protected,
		noLocalLogin: o.DisableLocalLogin, adminGroup: o.SSOAdminGroup, now: o.Now}
	if c, ok := o.Store.(store.CachedReader); ok {
		s.cached = c.GetCached
	}
	return s
}

// ToModel is the API view of u: never a password or hash.
func ToModel(u *portalv1alpha1.User) models.User {
	ns := slices.Clone(u.Spec.Namespaces)
	if ns == nil {
		ns = []string{}
	}
	role := u.Spec.Role
	if role == "" {
		role = portalv1alpha1.RoleNone
	}
	return models.User{ID: u.Spec.ID, Username: u.Spec.Username, Email: u.Spec.Email, Role: string(role),
		Namespaces: ns, CreatedAt: u.CreationTimestamp.UTC(), Locked: Locked(u, time.Now())}
}

// Register creates an account with no role. The first admin's username is reserved.
func (s *Users) Register(ctx context.Context, req models.RegisterRequest) (models.User, error) {
	if s.noLocalLogin {
		return models.User{}, errNoLocalLogin
	}
	if name := normalizeUsername(req.Username); s.reserved != "" && name == s.reserved {
		return models.User{}, &Error{Kind: KindInvalid, Message: fmt.Sprintf("username %q is reserved", name),
			Fields: []models.FieldError{field("username", "is reserved")}}
	}
	return s.create(ctx, req, portalv1alpha1.RoleNone)
}

func (s *Users) create(ctx context.Context, req models.RegisterRequest, role portalv1alpha1.Role) (models.User, error) {
	name := normalizeUsername(req.Username)
	var bad []models.FieldError
	bad = append(bad, validateUsername(name)...)
	bad = append(bad, validateEmail(req.Email)...)
	bad = append(bad, validatePassword("password", req.Password)...)
	if len(bad) > 0 {
		return models.User{}, invalid(bad...)
	}
	hash, err := auth.HashPassword(ctx, req.Password)
	if err != nil {
		return models.User{}, err
	}
	u := &portalv1alpha1.User{Spec: portalv1alpha1.UserSpec{
		ID: uuid.NewString(), Username: name, Email: req.Email, Role: role,
	}}
	if err := s.store.Create(ctx, u, hash); err != nil {
		if errors.Is(err, store.ErrExists) {
			return models.User{}, &Error{Kind: KindConflict, Message: fmt.Sprintf("username %q is already taken", name),
				Fields: []models.FieldError{field("username", "is already taken")}}
		}
		return models.User{}, err
	}
	if role != portalv1alpha1.RoleNone {
		if err := s.bindings.Sync(ctx, u); err != nil {
			return models.User{}, err
		}
	}
	slog.InfoContext(ctx, "Registered user", "user", u.Name, "id", u.Spec.ID, "role", role)
	return ToModel(u), nil
}

// EnsureAdmin creates the first admin when no user of that name exists. An existing
// account keeps its role while another admin exists; when none is left (the role was
// taken by hand, or by a portal that did not guard the last admin) it becomes an admin
// again, so the portal never runs without one. The name is reserved (registration
// refuses it), so this account is the portal's own. It reports whether it created one.
func (s *Users) EnsureAdmin(ctx context.Context, username, email, password string) (bool, error) {
	if u, err := s.store.Get(ctx, normalizeUsername(username)); err == nil {
		if u.Spec.Role == portalv1alpha1.RoleAdmin {
			return false, nil
		}
		n, err := s.admins(ctx)
		if err != nil {
			return false, err
		}
		if n > 0 {
			slog.InfoContext(ctx, "The first admin's account is no admin; another admin exists, so it is left as it is",
				"user", u.Name, "role", u.Spec.Role)
			return false, nil
		}
		u.Spec.Role, u.Spec.Namespaces = portalv1alpha1.RoleAdmin, nil
		if err := s.store.Update(ctx, u); errors.Is(err, store.ErrConflict) {
			return false, nil // another replica, starting at the same time, was faster
		} else if err != nil {
			return false, fmt.Errorf("restore the admin role of %s: %w", u.Name, err)
		}
		if err := s.bindings.Sync(ctx, u); err != nil {
			return false, err
		}
		slog.WarnContext(ctx, "No admin was left: gave the first admin's account the admin role again", "user", u.Name)
		return false, nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return false, err
	}
	_, err := s.create(ctx, models.RegisterRequest{Username: username, Email: email, Password: password}, portalv1alpha1.RoleAdmin)
	var se *Error
	if errors.As(err, &se) && se.Kind == KindConflict {
		return false, nil // another replica was faster
	}
	return err == nil, err
}

// Login checks a password and issues a token pair. Unknown users, wrong passwords and
// locked accounts get the same error after the same work (one read of the User, one of
// a password Secret and one Argon2id check), and
// failure bookkeeping runs after the answer, so response times do not tell them apart.
func (s *Users) Login(ctx context.Context, req models.LoginRequest) (models.TokenResponse, error) {
	if s.noLocalLogin {
		return models.TokenResponse{}, errNoLocalLogin
	}
	var bad []models.FieldError
	if req.Username == "" {
		bad = append(bad, field("username", "is required"))
	}
	if req.Password == "" {
		bad = append(bad, field("password", "is required"))
	} else if len(req.Password) > 4*MaxPasswordLen {
		bad = append(bad, field("password", "is too long"))
	}
	if req.Username != "" {
		// No account has a name that could not be registered, so refusing it gives
		// nothing away; the store could not even look it up ("a/b" is no object name).
		bad = append(bad, validateUsername(normalizeUsername(req.Username))...)
	}
	if len(bad) > 0 {
		return models.TokenResponse{}, invalid(bad...)
	}
	name := normalizeUsername(req.Username)
	u, err := s.store.Get(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		// The same work as for a known user: a read of a password Secret (of a fresh
		// id, so there is none) and an Argon2id check.
		ghost := &portalv1alpha1.User{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: portalv1alpha1.UserSpec{ID: uuid.NewString(), Username: name}}
		if _, err := s.store.PasswordHash(ctx, ghost); err != nil && !errors.Is(err, store.ErrNotFound) {
			return models.TokenResponse{}, err
		}
		auth.BurnPasswordCheck(ctx, req.Password)
		if ctx.Err() != nil {
			return models.TokenResponse{}, ctx.Err()
		}
		return models.TokenResponse{}, errBadCredentials
	}
	if err != nil {
		return models.TokenResponse{}, err
	}
	if u.Spec.SSO != nil {
		return models.TokenResponse{}, s.refuseSSOPassword(ctx, u, req.Password)
	}
	hash, err := s.store.PasswordHash(ctx, u)
	if err != nil {
		return models.TokenResponse{}, err
	}
	stale, checkErr := auth.CheckPassword(ctx, hash, req.Password)
	if ctx.Err() != nil {
		return models.TokenResponse{}, ctx.Err() // gave up waiting for a hashing slot: not a failed login
	}
	client := clientOf(ctx)
	locked := lockedFor(u, client, s.now())
	if checkErr != nil || locked {
		if !locked {
			// Detached from the request so the client cannot cancel the count, and run
			// after the answer so it costs the caller no time.
			go s.recordFailure(context.WithoutCancel(ctx), u.Name, client)
		} else {
			slog.InfoContext(ctx, "Refused login to an account locked for this client", "user", u.Name)
		}
		return models.TokenResponse{}, errBadCredentials
	}
	if stale {
		s.upgradeHash(ctx, u, req.Password)
	}
	return s.startSession(ctx, u)
}

// upgradeHash replaces a hash made before passwords were normalised, which password
// has just matched as typed, with the hash of its normal form, so that the password
// logs in whichever Unicode form is typed from now on. A failure leaves the old hash,
// which still works: the login goes on and the next one tries again.
func (s *Users) upgradeHash(ctx context.Context, u *portalv1alpha1.User, password string) {
	hash, err := auth.HashPassword(ctx, password)
	if err == nil {
		err = s.store.SetPasswordHash(ctx, u, hash)
	}
	if err != nil {
		slog.ErrorContext(ctx, "Upgrading a password hash to the normalised form failed; the old one stays", "user", u.Name, "err", err)
		return
	}
	slog.InfoContext(ctx, "Upgraded a password hash to the normalised (NFC) form", "user", u.Name)
}

// recordFailure counts a failed login or current-password check of client in the
// User's status and locks the account for that client when the policy says so,
// retrying when another replica wrote first.
func (s *Users) recordFailure(ctx context.Context, username, client string) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var u *portalv1alpha1.User
	err := retry.OnError(failureBackoff, func(err error) bool { return errors.Is(err, store.ErrConflict) }, func() error {
		var err error
		if u, err = s.store.Get(ctx, username); err != nil {
			return err
		}
		s.lockout.countFailure(u, client, s.now())
		return s.store.UpdateStatus(ctx, u)
	})
	if err != nil {
		slog.ErrorContext(ctx, "Recording a failed login failed", "user", username, "err", err)
		return
	}
	slog.InfoContext(ctx, "Failed login", "user", username, "failedLogins", u.Status.FailedLogins, "lockedForClient", lockedFor(u, client, s.now()))
}

// failureBackoff spaces the retries of a failed-login count that lost a write race.
// A burst of wrong passwords makes every replica write the same User at once; with
// jittered, growing pauses (about 2.5s in all) they spread out and each count lands,
// where a handful of immediate retries let counts go missing.
var failureBackoff = wait.Backoff{Steps: 12, Duration: 10 * time.Millisecond, Factor: 1.5, Jitter: 1, Cap: time.Second}

// Authenticate returns the caller an access token belongs to, while the token's
// session lasts.
//
// With a cached store the User comes from the watch-fed cache when the cache says yes:
// the token's holder, generation and session all match. A cache can only lag, so a no
// from it may be a login or refresh made on another replica moments ago, and is asked
// again of the API server. A logout, revocation or password change made on another
// replica therefore ends the session here once the watch delivers it (the watch's
// delay, see docs/performance.md); one made on this replica holds here at once.
func (s *Users) Authenticate(ctx context.Context, token string) (*Caller, error) {
	claims, err := s.verified.verify(ctx, s.issuer, token, s.now())
	if err != nil {
		return nil, errBadToken
	}
	if s.cached != nil {
		if u, err := s.holderIn(ctx, s.cached, claims); err == nil && hasSession(u, claims.Family, s.now()) {
			return s.caller(u, claims), nil
		}
	}
	u, err := s.holder(ctx, claims)
	if err != nil {
		return nil, err
	}
	if !hasSession(u, claims.Family, s.now()) {
		return nil, errBadToken
	}
	return s.caller(u, claims), nil
}

func (s *Users) caller(u *portalv1alpha1.User, claims *auth.Claims) *Caller {
	return &Caller{User: u, Identity: s.imp.IdentityOf(u.Spec.ID, u.Spec.Role), Session: claims.Family}
}

// Logout ends the caller's current session: its refresh token stops working at once on
// every replica, and every access token it issued at once on this one and on the others
// within their watch's delay (see Authenticate). The user's other sessions go on.
func (s *Users) Logout(ctx context.Context, caller *Caller) error {
	if caller.Session == "" {
		return errBadToken
	}
	u := caller.User.DeepCopy()
	for range statusAttempts {
		n := len(u.Status.Sessions)
		u.Status.Sessions = slices.DeleteFunc(u.Status.Sessions, func(x portalv1alpha1.Session) bool { return x.ID == caller.Session })
		if len(u.Status.Sessions) == n {
			return nil // ended meanwhile
		}
		err := s.store.UpdateStatus(ctx, u)
		if err == nil {
			slog.InfoContext(ctx, "Logged out", "user", u.Name, "session", caller.Session)
			return nil
		}
		if u, err = s.reread(ctx, u, err); err != nil {
			return err
		}
	}
	return fmt.Errorf("end session %s of %s: %w", caller.Session, u.Name, store.ErrConflict)
}

// LogoutAll revokes every token of the caller.
func (s *Users) LogoutAll(ctx context.Context, caller *Caller) error {
	return s.revoke(ctx, caller.User)
}

func (s *Users) revoke(ctx context.Context, u *portalv1alpha1.User) error {
	for range statusAttempts {
		u.Status.TokenGeneration++
		u.Status.Sessions = nil
		err := s.store.UpdateStatus(ctx, u)
		if !errors.Is(err, store.ErrConflict) {
			if err == nil {
				slog.InfoContext(ctx, "Revoked every token of user", "user", u.Name)
			}
			return err
		}
		fresh, err := s.store.Get(ctx, u.Name)
		if err != nil {
			return err
		}
		*u = *fresh
	}
	return fmt.Errorf("revoke tokens of %s: %w", u.Name, store.ErrConflict)
}

// UpdateMe changes the caller's email and, given the current password, the password.
// A new password revokes every token of the user.
func (s *Users) UpdateMe(ctx context.Context, caller *Caller, req models.UpdateMeRequest) (models.User, error) {
	// Read live: the caller's User may come from the cache, and a write decided on a
	// cached copy would fail on its resourceVersion, or lock on stale counts.
	u, err := s.store.Get(ctx, caller.User.Name)
	if errors.Is(err, store.ErrNotFound) {
		return models.User{}, errBadToken // deleted since the token was checked
	}
	if err != nil {
		return models.User{}, err
	}
	if u.Spec.ID != caller.User.Spec.ID {
		return models.User{}, errBadToken // recreated under the same name since the token was checked
	}
	var bad []models.FieldError
	if req.Email != nil {
		bad = append(bad, validateEmail(*req.Email)...)
	}
	if req.Password != nil && u.Spec.SSO != nil {
		bad = append(bad, field("password", "cannot be set: this account signs in through single sign-on and has no password"))
	} else if req.Password != nil {
		bad = append(bad, validatePassword("password", *req.Password)...)
		if req.CurrentPassword == nil || *req.CurrentPassword == "" {
			bad = append(bad, field("currentPassword", "is required to change the password"))
		}
	}
	if req.Email == nil && req.Password == nil {
		bad = append(bad, field("email", "nothing to change: give email or password"))
	}
	if len(bad) > 0 {
		return models.User{}, invalid(bad...)
	}
	if req.Password != nil {
		// The current password is guessed here as well as at login (with a stolen
		// access token, say), so the same failure count and lock apply.
		if lockedFor(u, clientOf(ctx), s.now()) {
			return models.User{}, &Error{Kind: KindForbidden, Message: "too many wrong passwords: the account is locked for a while; try again later",
				Fields: []models.FieldError{field("currentPassword", "cannot be checked while the account is locked")}}
		}
		hash, err := s.store.PasswordHash(ctx, u)
		if err != nil {
			return models.User{}, err
		}
		// A stale hash needs no upgrade here: the new password replaces it below.
		if _, err := auth.CheckPassword(ctx, hash, *req.CurrentPassword); err != nil {
			if ctx.Err() != nil {
				return models.User{}, ctx.Err()
			}
			s.recordFailure(context.WithoutCancel(ctx), u.Name, clientOf(ctx))
			return models.User{}, &Error{Kind: KindForbidden, Message: "the current password is wrong",
				Fields: []models.FieldError{field("currentPassword", "is wrong")}}
		}
	}
	if req.Email != nil && *req.Email != u.Spec.Email {
		u.Spec.Email = *req.Email
		if err := s.store.Update(ctx, u); err != nil {
			return models.User{}, s.conflict(err)
		}
	}
	if req.Password != nil {
		hash, err := auth.HashPassword(ctx, *req.Password)
		if err != nil {
			return models.User{}, err
		}
		if err := s.store.SetPasswordHash(ctx, u, hash); err != nil {
			return models.User{}, err
		}
		if err := s.revoke(ctx, u); err != nil {
			return models.User{}, err
		}
	}
	return ToModel(u), nil
}

func (s *Users) conflict(err error) error {
	if errors.Is(err, store.ErrConflict) {
		return &Error{Kind: KindConflict, Message: "the user changed meanwhile; read it again and retry"}
	}
	return err
}

// List returns every user, for callers RBAC lets list users.
func (s *Users) List(ctx context.Context, caller *Caller) (models.UserList, error) {
	return s.ListPage(ctx, caller, Page{})
}

// ListPage returns one page of users, sorted by username, for callers RBAC lets list
// users; the answer's metadata.continue fetches the next page.
func (s *Users) ListPage(ctx context.Context, caller *Caller, page Page) (models.UserList, error) {
	if err := s.authz.requireOnUsers(ctx, caller, "list"); err != nil {
		return models.UserList{}, err
	}
	l, err := s.store.ListPage(ctx, page.Limit, page.Continue)
	if err != nil {
		return models.UserList{}, pageError(page, err)
	}
	out := models.UserList{Items: make([]models.User, 0, len(l.Items)),
		Metadata: models.ListMeta{Continue: l.Continue, RemainingItemCount: l.RemainingItemCount}}
	for i := range l.Items {
		out.Items = append(out.Items, ToModel(&l.Items[i]))
	}
	return out, nil
}

// Get returns the user with id, for callers RBAC lets get users.
func (s *Users) Get(ctx context.Context, caller *Caller, id string) (models.User, error) {
	u, err := s.byID(ctx, caller, "get", id)
	if err != nil {
		return models.User{}, err
	}
	return ToModel(u), nil
}

func (s *Users) byID(ctx context.Context, caller *Caller, verb, id string) (*portalv1alpha1.User, error) {
	if err := s.authz.requireOnUsers(ctx, caller, verb); err != nil {
		return nil, err
	}
	if uuid.Validate(id) != nil {
		return nil, invalid(field("id", "must be a UUID"))
	}
	u, err := s.store.GetByID(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, &Error{Kind: KindNotFound, Message: fmt.Sprintf("no user with id %s", id)}
	}
	return u, err
}

// Update sets a user's role and a developer's namespaces, then brings the user's
// bindings in step, for callers RBAC lets update users.
func (s *Users) Update(ctx context.Context, caller *Caller, id string, req models.UpdateUserRequest) (models.User, error) {
	u, err := s.byID(ctx, caller, "update", id)
	if err != nil {
		return models.User{}, err
	}
	var bad []models.FieldError
	if req.Role == nil && req.Namespaces == nil {
		bad = append(bad, field("role", "nothing to change: give role or namespaces"))
	}
	if req.Role != nil && !slices.Contains(portalv1alpha1.Roles, portalv1alpha1.Role(*req.Role)) {
		bad = append(bad, field("role", "must be one of admin, developer, auditor, none; got %q", *req.Role))
	}
	if req.Namespaces != nil {
		for i, ns := range *req.Namespaces {
			if len(ns) > 63 || !dnsLabel.MatchString(ns) {
				bad = append(bad, field(fmt.Sprintf("namespaces[%d]", i), "%q is not a valid namespace name", ns))
			} else if why := s.protected.Why(ns); why != "" {
				bad = append(bad, field(fmt.Sprintf("namespaces[%d]", i), "namespace %q is protected (%s) and cannot be granted", ns, why))
			}
		}
	}
	if len(bad) > 0 {
		return models.User{}, invalid(bad...)
	}
	before := u.DeepCopy()
	if req.Role != nil {
		u.Spec.Role = portalv1alpha1.Role(*req.Role)
	}
	if req.Namespaces != nil {
		u.Spec.Namespaces = slices.Compact(slices.Sorted(slices.Values(*req.Namespaces)))
	}
	if u.Spec.Role != portalv1alpha1.RoleDeveloper {
		u.Spec.Namespaces = nil
	}
	// Whoever grants a role must be allowed to bind its ClusterRole there themselves, as
	// the API server demands of anyone creating a binding: the portal's own
	// ServiceAccount, which writes the bindings, may bind every role.
	if err := s.authz.requireGrants(ctx, caller, u.Spec.Role, s.bindings.NewGrants(before, u)); err != nil {
		return models.User{}, err
	}
	// A namespace that does not exist is refused before the user says so. The User is
	// written before its bindings, so the bindings reconciler, which follows the User,
	// never sees bindings newer than the User and undoes them.
	if err := s.bindings.CheckNamespaces(ctx, u); err != nil {
		return models.User{}, err
	}
	if before.Spec.Role == portalv1alpha1.RoleAdmin && u.Spec.Role != portalv1alpha1.RoleAdmin {
		// Last, after every other check: it writes another admin's User.
		err = s.withAnotherAdmin(ctx, before, u, "take the admin role from")
	} else {
		err = s.store.Update(ctx, u)
	}
	if err != nil {
		return models.User{}, s.conflict(err)
	}
	// In step at once for the answer; the reconciler would get there too.
	if err := s.bindings.Sync(ctx, u); err != nil {
		var missing *MissingNamespaceError
		if errors.As(err, &missing) { // deleted since the check
			return models.User{}, invalid(field("namespaces", "namespaces %v do not exist", missing.Namespaces))
		}
		return models.User{}, err
	}
	slog.InfoContext(ctx, "Updated user", "user", u.Name, "role", u.Spec.Role, "namespaces", u.Spec.Namespaces, "by", caller.User.Name)
	return ToModel(u), nil
}

// Delete removes a user, its bindings and its password hash, for callers RBAC lets
// delete users.
func (s *Users) Delete(ctx context.Context, caller *Caller, id string) error {
	u, err := s.byID(ctx, caller, "delete", id)
	if err != nil {
		return err
	}
	if u.Spec.Role == portalv1alpha1.RoleAdmin {
		// An admin loses the role first, as a demotion does, so that two admins
		// deleting each other at once cannot leave none; the delete follows.
		before := u.DeepCopy()
		u.Spec.Role, u.Spec.Namespaces = portalv1alpha1.RoleNone, nil
		if err := s.withAnotherAdmin(ctx, before, u, "delete"); err != nil {
			return s.conflict(err)
		}
	}
	// The User goes first, so the reconciler never sees its bindings missing while it
	// still exists and puts them back.
	if err := s.store.Delete(ctx, u); err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	if err := s.bindings.Remove(ctx, u); err != nil {
		return err
	}
	slog.InfoContext(ctx, "Deleted user", "user", u.Name, "by", caller.User.Name)
	return nil
}

// admins counts the users with the admin role.
func (s *Users) admins(ctx context.Context) (int, error) {
	us, err := s.store.List(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for i := range us {
		if us[i].Spec.Role == portalv1alpha1.RoleAdmin {
			n++
		}
	}
	return n, nil
}

// Unlock clears every failed-login count and lock of the user with id, for callers
// RBAC lets update users.
func (s *Users) Unlock(ctx context.Context, caller *Caller, id string) (models.User, error) {
	u, err := s.byID(ctx, caller, "update", id)
	if err != nil {
		return models.User{}, err
	}
	for range statusAttempts {
		if u.Status.FailedLogins == 0 && u.Status.LockedUntil == nil && len(u.Status.ClientLockouts) == 0 {
			return ToModel(u), nil // nothing to clear: no write
		}
		u.Status.FailedLogins, u.Status.LockedUntil, u.Status.ClientLockouts = 0, nil, nil
		err := s.store.UpdateStatus(ctx, u)
		if err == nil {
			slog.InfoContext(ctx, "Unlocked user", "user", u.Name, "by", caller.User.Name)
			return ToModel(u), nil
		}
		if u, err = s.reread(ctx, u, err); err != nil {
			return models.User{}, err
		}
	}
	return models.User{}, fmt.Errorf("unlock %s: %w", u.Name, store.ErrConflict)
}
