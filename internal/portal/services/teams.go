package services

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	portalv1alpha1 "github.com/mooringhq/mooring/api/portal/v1alpha1"
	"github.com/mooringhq/mooring/internal/portal/models"
	"github.com/mooringhq/mooring/internal/portal/store"
)

// Teams manages portal teams: a role in some namespaces for a set of accounts, named
// or by single sign-on group. As for users, RBAC decides who may read and change teams
// (teams.portal.mooring.dev, asked as the caller), and granting a role through a team
// takes bind on its ClusterRole in each namespace.
type Teams struct {
	store     store.Teams
	users     store.Users
	authz     *Authz
	bindings  *Bindings
	protected Protected
}

// TeamsOptions are the parts Teams works with.
type TeamsOptions struct {
	Store    store.Teams
	Users    store.Users
	Authz    *Authz
	Bindings *Bindings
	// Protected are the namespaces no team may be granted.
	Protected Protected
}

// NewTeams returns the teams service.
func NewTeams(o TeamsOptions) *Teams {
	return &Teams{store: o.Store, users: o.Users, authz: o.Authz, bindings: o.Bindings, protected: o.Protected}
}

// TeamToModel is the API view of t with members in it (nil: as its status last said).
func TeamToModel(t *portalv1alpha1.Team, members []*portalv1alpha1.User) models.Team {
	orEmpty := func(s []string) []string {
		if s == nil {
			return []string{}
		}
		return slices.Clone(s)
	}
	bound := t.Status.Members
	if members != nil {
		bound = make([]string, 0, len(members))
		for _, u := range members {
			bound = append(bound, u.Spec.Username)
		}
	}
	return models.Team{Name: t.Name, Description: t.Spec.Description, Members: orEmpty(t.Spec.Members),
		Groups: orEmpty(t.Spec.Groups), Role: string(t.Spec.Role), Namespaces: orEmpty(t.Spec.Namespaces),
		BoundMembers: orEmpty(bound), CreatedAt: t.CreationTimestamp.UTC()}
}

// toModels is the API view of ts with the members they have now: the API brings a
// team's bindings in step when it writes the team, so these are whom they name (the
// status, written by the reconciler, may lag a moment behind).
func (s *Teams) toModels(ctx context.Context, ts ...portalv1alpha1.Team) ([]models.Team, error) {
	us, err := s.users.List(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]models.Team, 0, len(ts))
	for i := range ts {
		out = append(out, TeamToModel(&ts[i], orNone(Members(&ts[i], us))))
	}
	return out, nil
}

// orNone is members, never nil: no members is an answer, not "unknown".
func orNone(members []*portalv1alpha1.User) []*portalv1alpha1.User {
	if members == nil {
		return []*portalv1alpha1.User{}
	}
	return members
}

// toModel is toModels of one team.
func (s *Teams) toModel(ctx context.Context, t *portalv1alpha1.Team) (models.Team, error) {
	m, err := s.toModels(ctx, *t)
	if err != nil {
		return models.Team{}, err
	}
	return m[0], nil
}

// List returns every team, for callers RBAC lets list teams.
func (s *Teams) List(ctx context.Context, caller *Caller) (models.TeamList, error) {
	if err := s.authz.requireOnPortal(ctx, caller, "list", "teams"); err != nil {
		return models.TeamList{}, err
	}
	ts, err := s.store.List(ctx)
	if err != nil {
		return models.TeamList{}, err
	}
	items, err := s.toModels(ctx, ts...)
	return models.TeamList{Items: items}, err
}

// Get returns the team name, for callers RBAC lets get teams.
func (s *Teams) Get(ctx context.Context, caller *Caller, name string) (models.Team, error) {
	t, err := s.byName(ctx, caller, "get", name)
	if err != nil {
		return models.Team{}, err
	}
	return s.toModel(ctx, t)
}

func (s *Teams) byName(ctx context.Context, caller *Caller, verb, name string) (*portalv1alpha1.Team, error) {
	if err := s.authz.requireOnPortal(ctx, caller, verb, "teams"); err != nil {
		return nil, err
	}
	if bad := validateTeamName(name); bad != nil {
		return nil, invalid(bad...)
	}
	t, err := s.store.Get(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return nil, &Error{Kind: KindNotFound, Message: fmt.Sprintf("no team named %s", name)}
	}
	return t, err
}

// Create makes a team and binds its members, for callers RBAC lets create teams and
// bind the team's role in each of its namespaces.
func (s *Teams) Create(ctx context.Context, caller *Caller, req models.CreateTeamRequest) (models.Team, error) {
	if err := s.authz.requireOnPortal(ctx, caller, "create", "teams"); err != nil {
		return models.Team{}, err
	}
	t := &portalv1alpha1.Team{ObjectMeta: metav1.ObjectMeta{Name: req.Name}, Spec: portalv1alpha1.TeamSpec{
		Description: req.Description, Members: slices.Clone(req.Members), Groups: req.Groups,
		Role: portalv1alpha1.TeamRole(req.Role), Namespaces: req.Namespaces,
	}}
	if bad := validateTeamName(req.Name); bad != nil {
		return models.Team{}, invalid(bad...)
	}
	if err := s.validateSpec(ctx, &t.Spec); err != nil {
		return models.Team{}, err
	}
	if err := s.check(ctx, caller, nil, t); err != nil {
		return models.Team{}, err
	}
	if err := s.store.Create(ctx, t); err != nil {
		if errors.Is(err, store.ErrExists) {
			return models.Team{}, &Error{Kind: KindConflict, Message: fmt.Sprintf("team %q already exists", t.Name),
				Fields: []models.FieldError{field("name", "is already taken")}}
		}
		return models.Team{}, err
	}
	if err := s.sync(ctx, t); err != nil {
		return models.Team{}, err
	}
	slog.InfoContext(ctx, "Created team", "team", t.Name, "role", t.Spec.Role, "namespaces", t.Spec.Namespaces, "by", caller.User.Name)
	return s.toModel(ctx, t)
}

// Update replaces what req gives of the team name, for callers RBAC lets update teams
// and bind the team's role wherever the change grants it anew.
func (s *Teams) Update(ctx context.Context, caller *Caller, name string, req models.UpdateTeamRequest) (models.Team, error) {
	t, err := s.byName(ctx, caller, "update", name)
	if err != nil {
		return models.Team{}, err
	}
	if req.Description == nil && req.Members == nil && req.Groups == nil && req.Role == nil && req.Namespaces == nil {
		return models.Team{}, invalid(field("members", "nothing to change: give description, members, groups, role or namespaces"))
	}
	before := t.DeepCopy()
	if req.Description != nil {
		t.Spec.Description = *req.Description
	}
	if req.Members != nil {
		t.Spec.Members = slices.Clone(*req.Members)
	}
	if req.Groups != nil {
		t.Spec.Groups = *req.Groups
	}
	if req.Role != nil {
		t.Spec.Role = portalv1alpha1.TeamRole(*req.Role)
	}
	if req.Namespaces != nil {
		t.Spec.Namespaces = *req.Namespaces
	}
	if err := s.validateSpec(ctx, &t.Spec); err != nil {
		return models.Team{}, err
	}
	if err := s.check(ctx, caller, before, t); err != nil {
		return models.Team{}, err
	}
	if err := s.store.Update(ctx, t); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return models.Team{}, &Error{Kind: KindConflict, Message: "the team changed meanwhile; read it again and retry"}
		}
		return models.Team{}, err
	}
	if err := s.sync(ctx, t); err != nil {
		return models.Team{}, err
	}
	slog.InfoContext(ctx, "Updated team", "team", t.Name, "role", t.Spec.Role, "namespaces", t.Spec.Namespaces, "by", caller.User.Name)
	return s.toModel(ctx, t)
}

// Delete removes the team name and its bindings, for callers RBAC lets delete teams.
func (s *Teams) Delete(ctx context.Context, caller *Caller, name string) error {
	t, err := s.byName(ctx, caller, "delete", name)
	if err != nil {
		return err
	}
	// The Team goes first, so the reconciler never sees its bindings missing while it
	// still exists and puts them back.
	if err := s.store.Delete(ctx, t); err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	if err := s.bindings.RemoveTeam(ctx, t.Name); err != nil {
		return err
	}
	slog.InfoContext(ctx, "Deleted team", "team", t.Name, "by", caller.User.Name)
	return nil
}

// Of returns the teams u is in, for GET /api/v1/users/me and the namespaces u may use:
// what the portal itself binds for u, so no RBAC question is asked.
func (s *Teams) Of(ctx context.Context, u *portalv1alpha1.User) ([]models.TeamMembership, error) {
	ts, err := s.store.List(ctx)
	if err != nil {
		return nil, err
	}
	out := []models.TeamMembership{}
	for _, t := range TeamsOf(u, ts) {
		ns := s.bindings.TeamNamespaces(t)
		if ns == nil {
			ns = []string{}
		}
		out = append(out, models.TeamMembership{Name: t.Name, Role: string(t.Spec.Role), Namespaces: ns})
	}
	return out, nil
}

// check refuses a change from before (nil: none) to t that grants what the caller may
// not bind, or names namespaces that do not exist.
func (s *Teams) check(ctx context.Context, caller *Caller, before, t *portalv1alpha1.Team) error {
	if err := s.authz.requireGrants(ctx, caller, portalv1alpha1.Role(t.Spec.Role), s.newTeamGrants(before, t)); err != nil {
		return err
	}
	return s.bindings.CheckTeamNamespaces(ctx, t)
}

// newTeamGrants returns what t grants that before did not: every grant of t when the
// team is new or gained a member or a group (someone new is granted all of it), the
// grants in new namespaces or of a new role otherwise. Taking away grants nothing.
func (s *Teams) newTeamGrants(before, t *portalv1alpha1.Team) []Grant {
	all := s.bindings.TeamGrants(t)
	if before == nil || gained(before.Spec.Members, t.Spec.Members) || gained(before.Spec.Groups, t.Spec.Groups) {
		return all
	}
	had := s.bindings.TeamGrants(before)
	var gs []Grant
	for _, g := range all {
		if !slices.Contains(had, g) {
			gs = append(gs, g)
		}
	}
	return gs
}

// gained reports whether after has an element before has not.
func gained(before, after []string) bool {
	for _, x := range after {
		if !slices.Contains(before, x) {
			return true
		}
	}
	return false
}

func (s *Teams) sync(ctx context.Context, t *portalv1alpha1.Team) error {
	// In step at once for the answer; the reconciler would get there too.
	err := s.bindings.SyncTeam(ctx, t)
	var missing *MissingNamespaceError
	if errors.As(err, &missing) { // deleted since the check
		return invalid(field("namespaces", "namespaces %v do not exist", missing.Namespaces))
	}
	return err
}
