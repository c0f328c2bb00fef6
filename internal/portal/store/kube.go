package store

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	portalv1alpha1 "github.com/mooringhq/mooring/api/portal/v1alpha1"
)

// hashKey is the Secret key that holds the password hash.
const hashKey = "hash"

// Kube stores users in the cluster. It reads straight from the API server, never from
// a cache, so a revocation or lock written by one replica holds on every replica at once
// for whatever reads it (logins, refreshes, writes); Cached adds the cache that
// authentication reads.
type Kube struct {
	c client.Client
	// namespace holds the password hash Secrets.
	namespace string
}

var _ Users = (*Kube)(nil)

// NewKube returns a Users backed by c, keeping password hashes in namespace.
func NewKube(c client.Client, namespace string) *Kube {
	return &Kube{c: c, namespace: namespace}
}

// SecretName is the name of the Secret holding the password hash of the user with id.
func SecretName(id string) string { return "portal-password-" + id }

func wrap(err error, what string) error {
	switch {
	case err == nil:
		return nil
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%s: %w", what, ErrNotFound)
	case apierrors.IsAlreadyExists(err):
		return fmt.Errorf("%s: %w", what, ErrExists)
	case apierrors.IsConflict(err):
		return fmt.Errorf("%s: %w", what, ErrConflict)
	default:
		return fmt.Errorf("%s: %w", what, err)
	}
}

// Create makes the User first, which claims the username atomically, then the Secret,
// owned by the User so the garbage collector removes it should a Delete be cut short.
// An account without a password (single sign-on) gets no Secret.
func (k *Kube) Create(ctx context.Context, u *portalv1alpha1.User, passwordHash string) error {
	u.Name = u.Spec.Username
	if u.Labels == nil {
		u.Labels = map[string]string{}
	}
	u.Labels[portalv1alpha1.IDLabel] = u.Spec.ID
	if err := k.c.Create(ctx, u); err != nil {
		return wrap(err, "create User "+u.Name)
	}
	if passwordHash == "" {
		return nil
	}
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       k.namespace,
			Name:            SecretName(u.Spec.ID),
			Labels:          map[string]string{portalv1alpha1.IDLabel: u.Spec.ID},
			OwnerReferences: []metav1.OwnerReference{OwnerRef(u)},
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{hashKey: []byte(passwordHash)},
	}
	if err := k.c.Create(ctx, s); err != nil {
		// Without a hash the account is unusable and its name blocked: give the name back.
		_ = k.c.Delete(ctx, u)
		return wrap(err, "create password Secret of User "+u.Name)
	}
	return nil
}

// OwnerRef makes u the owner of what the portal creates for it (its hash Secret, its
// RoleBindings), so deleting the User removes them even if the portal stops half-way.
func OwnerRef(u *portalv1alpha1.User) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: portalv1alpha1.GroupVersion.String(),
		Kind:       "User",
		Name:       u.Name,
		UID:        u.UID,
	}
}

// Get returns the user named username.
func (k *Kube) Get(ctx context.Context, username string) (*portalv1alpha1.User, error) {
	u := &portalv1alpha1.User{}
	if err := k.c.Get(ctx, client.ObjectKey{Name: username}, u); err != nil {
		return nil, wrap(err, "get User "+username)
	}
	return u, nil
}

// GetByID returns the user whose id label is id.
func (k *Kube) GetByID(ctx context.Context, id string) (*portalv1alpha1.User, error) {
	list := &portalv1alpha1.UserList{}
	if err := k.c.List(ctx, list, client.MatchingLabels{portalv1alpha1.IDLabel: id}); err != nil {
		return nil, wrap(err, "find User with id "+id)
	}
	for i := range list.Items {
		if list.Items[i].Spec.ID == id {
			return &list.Items[i], nil
		}
	}
	return nil, fmt.Errorf("user with id %s: %w", id, ErrNotFound)
}

// List returns every user sorted by username.
func (k *Kube) List(ctx context.Context) ([]portalv1alpha1.User, error) {
	list := &portalv1alpha1.UserList{}
	if err := k.c.List(ctx, list); err != nil {
		return nil, wrap(err, "list Users")
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	return list.Items, nil
}

// ListPage returns one page of users. The API server lists a cluster-scoped kind in
// name order, so pages come sorted by username as List does, without sorting here.
func (k *Kube) ListPage(ctx context.Context, limit int64, cont string) (*portalv1alpha1.UserList, error) {
	list := &portalv1alpha1.UserList{}
	if err := k.c.List(ctx, list, client.Limit(limit), client.Continue(cont)); err != nil {
		return nil, wrap(err, "list Users")
	}
	return list, nil
}

// Update writes u's spec; the resourceVersion u was read at guards against lost updates.
func (k *Kube) Update(ctx context.Context, u *portalv1alpha1.User) error {
	return wrap(k.c.Update(ctx, u), "update User "+u.Name)
}

// UpdateStatus writes u's status through the status subresource.
func (k *Kube) UpdateStatus(ctx context.Context, u *portalv1alpha1.User) error {
	return wrap(k.c.Status().Update(ctx, u), "update status of User "+u.Name)
}

// Delete removes u and its password Secret.
func (k *Kube) Delete(ctx context.Context, u *portalv1alpha1.User) error {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: k.namespace, Name: SecretName(u.Spec.ID)}}
	if err := k.c.Delete(ctx, s); err != nil && !apierrors.IsNotFound(err) {
		return wrap(err, "delete password Secret of User "+u.Name)
	}
	return wrap(k.c.Delete(ctx, u, client.Preconditions{UID: &u.UID}), "delete User "+u.Name)
}

// PasswordHash reads u's password hash.
func (k *Kube) PasswordHash(ctx context.Context, u *portalv1alpha1.User) (string, error) {
	s := &corev1.Secret{}
	if err := k.c.Get(ctx, client.ObjectKey{Namespace: k.namespace, Name: SecretName(u.Spec.ID)}, s); err != nil {
		return "", wrap(err, "read password Secret of User "+u.Name)
	}
	h := string(s.Data[hashKey])
	if h == "" {
		return "", fmt.Errorf("password Secret of User %s has no %q key", u.Name, hashKey)
	}
	return h, nil
}

// SetPasswordHash replaces u's password hash.
func (k *Kube) SetPasswordHash(ctx context.Context, u *portalv1alpha1.User, hash string) error {
	s := &corev1.Secret{}
	key := client.ObjectKey{Namespace: k.namespace, Name: SecretName(u.Spec.ID)}
	if err := k.c.Get(ctx, key, s); err != nil {
		return wrap(err, "read password Secret of User "+u.Name)
	}
	s.Data = map[string][]byte{hashKey: []byte(hash)}
	return wrap(k.c.Update(ctx, s), "update password Secret of User "+u.Name)
}
