package store

import (
	"context"
	"errors"

	portalv1alpha1 "github.com/mooringhq/mooring/api/portal/v1alpha1"
)

// Errors every Users implementation returns (wrapped) for the cases callers handle.
var (
	ErrNotFound = errors.New("user not found")
	ErrExists   = errors.New("username already taken")
	ErrConflict = errors.New("user changed concurrently")
)

// Users stores portal accounts. Updates are optimistic: they fail with ErrConflict when
// the user changed since it was read, so replicas never overwrite each other.
type Users interface {
	// Create stores a new user and its password hash (none when passwordHash is empty: a
	// single sign-on account); ErrExists when the username is taken.
	Create(ctx context.Context, u *portalv1alpha1.User, passwordHash string) error
	// Get returns the user named username (lower-case); ErrNotFound when there is none.
	Get(ctx context.Context, username string) (*portalv1alpha1.User, error)
	// GetByID returns the user with id; ErrNotFound when there is none.
	GetByID(ctx context.Context, id string) (*portalv1alpha1.User, error)
	// List returns every user, sorted by username.
	List(ctx context.Context) ([]portalv1alpha1.User, error)
	// ListPage returns at most limit users (all when limit is 0), sorted by username,
	// from where the continue token cont of the previous page left off. The page's
	// metadata carries the token of the next page ("" after the last). An expired token
	// fails as the API server says (410 Gone, reason Expired).
	ListPage(ctx context.Context, limit int64, cont string) (*portalv1alpha1.UserList, error)
	// Update writes u's spec.
	Update(ctx context.Context, u *portalv1alpha1.User) error
	// UpdateStatus writes u's status (token generation, failed logins, lock).
	UpdateStatus(ctx context.Context, u *portalv1alpha1.User) error
	// Delete removes the user and its password hash.
	Delete(ctx context.Context, u *portalv1alpha1.User) error
	// PasswordHash returns the user's password hash.
	PasswordHash(ctx context.Context, u *portalv1alpha1.User) (string, error)
	// SetPasswordHash replaces the user's password hash.
	SetPasswordHash(ctx context.Context, u *portalv1alpha1.User, hash string) error
}
