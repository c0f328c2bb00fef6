package services

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"sync"

	portalv1alpha1 "github.com/mooringhq/mooring/api/portal/v1alpha1"
	"github.com/mooringhq/mooring/internal/portal/store"
)

// memStore is an in-memory store.Users with optimistic concurrency: a write carrying a
// stale resourceVersion fails with store.ErrConflict, like the API server's.
type memStore struct {
	mu     sync.Mutex
	users  map[string]*portalv1alpha1.User
	hashes map[string]string
	// conflicts makes the next that many status writes fail with store.ErrConflict,
	// as when other replicas write the User first.
	conflicts int
}

var _ store.Users = (*memStore)(nil)

func newMemStore() *memStore {
	return &memStore{users: map[string]*portalv1alpha1.User{}, hashes: map[string]string{}}
}

func (m *memStore) Create(_ context.Context, u *portalv1alpha1.User, hash string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.users[u.Spec.Username]; ok {
		return store.ErrExists
	}
	u.Name, u.ResourceVersion = u.Spec.Username, "1"
	m.users[u.Name], m.hashes[u.Name] = u.DeepCopy(), hash
	return nil
}

func (m *memStore) Get(_ context.Context, name string) (*portalv1alpha1.User, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	u, ok := m.users[name]
	if !ok {
		return nil, store.ErrNotFound
	}
	return u.DeepCopy(), nil
}

func (m *memStore) GetByID(ctx context.Context, id string) (*portalv1alpha1.User, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, u := range m.users {
		if u.Spec.ID == id {
			return u.DeepCopy(), nil
		}
	}
	return nil, store.ErrNotFound
}

func (m *memStore) List(context.Context) ([]portalv1alpha1.User, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []portalv1alpha1.User
	for _, u := range m.users {
		out = append(out, *u.DeepCopy())
	}
	return out, nil
}

// ListPage pages in name order; the continue token is the last name of the page.
func (m *memStore) ListPage(_ context.Context, limit int64, cont string) (*portalv1alpha1.UserList, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	names := slices.Sorted(maps.Keys(m.users))
	names = slices.DeleteFunc(names, func(n string) bool { return cont != "" && n <= cont })
	l := &portalv1alpha1.UserList{}
	for _, n := range names {
		if limit > 0 && int64(len(l.Items)) == limit {
			l.Continue = l.Items[len(l.Items)-1].Name
			break
		}
		l.Items = append(l.Items, *m.users[n].DeepCopy())
	}
	return l, nil
}

func (m *memStore) write(u *portalv1alpha1.User, apply func(stored *portalv1alpha1.User)) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	stored, ok := m.users[u.Name]
	if !ok {
		return store.ErrNotFound
	}
	if m.conflicts > 0 || stored.ResourceVersion != u.ResourceVersion {
		m.conflicts = max(m.conflicts-1, 0)
		return store.ErrConflict
	}
	apply(stored)
	rv, _ := strconv.Atoi(stored.ResourceVersion)
	stored.ResourceVersion = strconv.Itoa(rv + 1)
	u.ResourceVersion = stored.ResourceVersion
	return nil
}

func (m *memStore) Update(_ context.Context, u *portalv1alpha1.User) error {
	return m.write(u, func(s *portalv1alpha1.User) { s.Spec = *u.Spec.DeepCopy() })
}

func (m *memStore) UpdateStatus(_ context.Context, u *portalv1alpha1.User) error {
	return m.write(u, func(s *portalv1alpha1.User) { s.Status = *u.Status.DeepCopy() })
}

func (m *memStore) Delete(_ context.Context, u *portalv1alpha1.User) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.users, u.Name)
	delete(m.hashes, u.Name)
	return nil
}

func (m *memStore) PasswordHash(_ context.Context, u *portalv1alpha1.User) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.hashes[u.Name], nil
}

func (m *memStore) SetPasswordHash(_ context.Context, u *portalv1alpha1.User, hash string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.hashes[u.Name] = hash
	return nil
}
