package services

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"

	"github.com/google/uuid"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	portalv1alpha1 "github.com/mooringhq/mooring/api/portal/v1alpha1"
	"github.com/mooringhq/mooring/internal/portal/auth"
	"github.com/mooringhq/mooring/internal/portal/models"
	"github.com/mooringhq/mooring/internal/portal/sso"
	"github.com/mooringhq/mooring/internal/portal/store"
)

// errNoLocalLogin answers password logins and registrations while the portal accepts
// single sign-on only.
var errNoLocalLogin = &Error{Kind: KindForbidden,
	Message: "password login and registration are turned off on this portal: sign in through single sign-on"}

// usernameAttempts bounds the numbered variants of a username tried for a new single
// sign-on account before a random suffix is used.
const usernameAttempts = 20

// LoginSSO starts a session for the person a verified ID token names: the account of
// that issuer and subject, created on the first sign-in with no role and no password.
// Its groups claim is stored in the User's status when it changed (no write when it
// did not), and a member of the admin group (SSOAdminGroup) is made an admin. The
// session is a login like a password login's: the same tokens, refresh, logout and
// revocation.
func (s *Users) LoginSSO(ctx context.Context, id sso.Identity) (models.TokenResponse, error) {
	u, err := s.ssoAccount(ctx, id)
	if err != nil {
		return models.TokenResponse{}, err
	}
	if u, err = s.setGroups(ctx, u, id.Groups); err != nil {
		return models.TokenResponse{}, err
	}
	if err := s.grantAdminGroup(ctx, u, id.Groups); err != nil {
		return models.TokenResponse{}, err
	}
	slog.InfoContext(ctx, "Single sign-on", "user", u.Name, "issuer", id.Issuer, "groups", len(id.Groups))
	return s.startSession(ctx, u)
}

// ssoAccount returns the account of id's issuer and subject, creating it on the
// person's first sign-in.
func (s *Users) ssoAccount(ctx context.Context, id sso.Identity) (*portalv1alpha1.User, error) {
	// Sign-ins are rare next to API requests, and the users fit in one list: no index.
	us, err := s.store.List(ctx)
	if err != nil {
		return nil, err
	}
	for i := range us {
		if x := us[i].Spec.SSO; x != nil && x.Issuer == id.Issuer && x.Subject == id.Subject {
			return &us[i], nil
		}
	}
	email := id.Email
	if validateEmail(email) != nil {
		email = "" // the provider's word only when it is a plain address
	}
	for i := range usernameAttempts + 1 {
		name := id.Username
		switch {
		case i == usernameAttempts:
			name += "-" + uuid.NewString()[:6]
		case i > 0:
			name += "-" + strconv.Itoa(i+1)
		}
		if name == s.reserved {
			continue
		}
		u := &portalv1alpha1.User{Spec: portalv1alpha1.UserSpec{ID: uuid.NewString(), Username: name, Email: email,
			Role: portalv1alpha1.RoleNone, SSO: &portalv1alpha1.SSOIdentity{Issuer: id.Issuer, Subject: id.Subject}}}
		err := s.store.Create(ctx, u, "")
		if errors.Is(err, store.ErrExists) {
			continue // another account holds the name: try the next
		}
		if err != nil {
			return nil, err
		}
		slog.InfoContext(ctx, "Registered user at its first single sign-on", "user", u.Name, "id", u.Spec.ID)
		return u, nil
	}
	return nil, fmt.Errorf("no free username for %q: %w", id.Username, store.ErrExists)
}

// setGroups records the groups claim of u's sign-in in its status when it changed.
func (s *Users) setGroups(ctx context.Context, u *portalv1alpha1.User, groups []string) (*portalv1alpha1.User, error) {
	for range statusAttempts {
		if slices.Equal(u.Status.Groups, groups) {
			return u, nil // nothing changed: no write
		}
		u.Status.Groups = slices.Clone(groups)
		err := s.store.UpdateStatus(ctx, u)
		if err == nil {
			return u, nil
		}
		if u, err = s.reread(ctx, u, err); err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("store the groups of %s: %w", u.Name, store.ErrConflict)
}

// grantAdminGroup makes u an admin when its groups hold the admin group. Leaving the
// group takes nothing away: an admin takes the role as from anyone else, under the
// last-admin guard.
func (s *Users) grantAdminGroup(ctx context.Context, u *portalv1alpha1.User, groups []string) error {
	if s.adminGroup == "" || !slices.Contains(groups, s.adminGroup) || u.Spec.Role == portalv1alpha1.RoleAdmin {
		return nil
	}
	u.Spec.Role, u.Spec.Namespaces = portalv1alpha1.RoleAdmin, nil
	if err := s.store.Update(ctx, u); err != nil {
		return fmt.Errorf("make %s an admin as a member of %q: %w", u.Name, s.adminGroup, err)
	}
	if err := s.bindings.Sync(ctx, u); err != nil {
		return err
	}
	slog.InfoContext(ctx, "Made a member of the admin group an admin", "user", u.Name, "group", s.adminGroup)
	return nil
}

// refuseSSOPassword answers a password login to a single sign-on account: such an
// account has no password. It does the work of a failed login (a read of a password
// Secret and an Argon2id check) and answers the same, so the answer tells nothing of
// the account; it counts no failure, as there is no password to guess.
func (s *Users) refuseSSOPassword(ctx context.Context, u *portalv1alpha1.User, password string) error {
	ghost := &portalv1alpha1.User{ObjectMeta: metav1.ObjectMeta{Name: u.Name},
		Spec: portalv1alpha1.UserSpec{ID: uuid.NewString(), Username: u.Name}}
	if _, err := s.store.PasswordHash(ctx, ghost); err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	auth.BurnPasswordCheck(ctx, password)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	slog.InfoContext(ctx, "Refused a password login to a single sign-on account", "user", u.Name)
	return errBadCredentials
}
