package store

import (
	"context"
	"sort"

	"sigs.k8s.io/controller-runtime/pkg/client"

	portalv1alpha1 "github.com/mooringhq/mooring/api/portal/v1alpha1"
)

// Teams stores portal teams. Updates are optimistic, as for Users: ErrConflict when the
// team changed since it was read. The errors are those of Users (ErrNotFound, ErrExists,
// ErrConflict), wrapped with the team's name.
type Teams interface {
	// Create stores a new team; ErrExists when the name is taken.
	Create(ctx context.Context, t *portalv1alpha1.Team) error
	// Get returns the team named name; ErrNotFound when there is none.
	Get(ctx context.Context, name string) (*portalv1alpha1.Team, error)
	// List returns every team, sorted by name.
	List(ctx context.Context) ([]portalv1alpha1.Team, error)
	// Update writes t's spec.
	Update(ctx context.Context, t *portalv1alpha1.Team) error
	// Delete removes the team.
	Delete(ctx context.Context, t *portalv1alpha1.Team) error
}

// KubeTeams stores teams in the cluster, read straight from the API server like users.
type KubeTeams struct{ c client.Client }

var _ Teams = (*KubeTeams)(nil)

// NewKubeTeams returns a Teams backed by c.
func NewKubeTeams(c client.Client) *KubeTeams { return &KubeTeams{c: c} }

// Create stores t.
func (k *KubeTeams) Create(ctx context.Context, t *portalv1alpha1.Team) error {
	return wrap(k.c.Create(ctx, t), "create Team "+t.Name)
}

// Get returns the team named name.
func (k *KubeTeams) Get(ctx context.Context, name string) (*portalv1alpha1.Team, error) {
	t := &portalv1alpha1.Team{}
	if err := k.c.Get(ctx, client.ObjectKey{Name: name}, t); err != nil {
		return nil, wrap(err, "get Team "+name)
	}
	return t, nil
}

// List returns every team, sorted by name.
func (k *KubeTeams) List(ctx context.Context) ([]portalv1alpha1.Team, error) {
	var l portalv1alpha1.TeamList
	if err := k.c.List(ctx, &l); err != nil {
		return nil, wrap(err, "list Teams")
	}
	sort.Slice(l.Items, func(i, j int) bool { return l.Items[i].Name < l.Items[j].Name })
	return l.Items, nil
}

// Update writes t's spec.
func (k *KubeTeams) Update(ctx context.Context, t *portalv1alpha1.Team) error {
	return wrap(k.c.Update(ctx, t), "update Team "+t.Name)
}

// Delete removes t.
func (k *KubeTeams) Delete(ctx context.Context, t *portalv1alpha1.Team) error {
	return wrap(k.c.Delete(ctx, t), "delete Team "+t.Name)
}
