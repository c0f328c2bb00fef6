package ui

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"testing"

	portalv1alpha1 "github.com/mooringhq/mooring/api/portal/v1alpha1"
	"github.com/mooringhq/mooring/internal/portal/models"
	"github.com/mooringhq/mooring/internal/portal/services"
)

// fakeTeams keeps teams in memory; only admins may change them, as RBAC would say.
type fakeTeams struct {
	mu    sync.Mutex
	teams map[string]*models.Team
}

func (f *fakeTeams) List(context.Context, *services.Caller) (models.TeamList, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	l := models.TeamList{Items: []models.Team{}}
	for _, t := range f.teams {
		l.Items = append(l.Items, *t)
	}
	slices.SortFunc(l.Items, func(a, b models.Team) int { return cmpStrings(a.Name, b.Name) })
	return l, nil
}

func cmpStrings(a, b string) int {
	if a < b {
		return -1
	}
	if a > b {
		return 1
	}
	return 0
}

func forbidUnlessAdmin(c *services.Caller) error {
	if c.User.Spec.Role != portalv1alpha1.RoleAdmin {
		return &services.Error{Kind: services.KindForbidden, Message: c.User.Spec.Username + " may not update teams"}
	}
	return nil
}

func (f *fakeTeams) Create(_ context.Context, c *services.Caller, req models.CreateTeamRequest) (models.Team, error) {
	if err := forbidUnlessAdmin(c); err != nil {
		return models.Team{}, err
	}
	if slices.Contains(req.Namespaces, "kube-system") {
		return models.Team{}, &services.Error{Kind: services.KindInvalid, Message: "invalid input",
			Fields: []models.FieldError{{Field: "namespaces[0]", Message: `namespace "kube-system" is protected`}}}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	t := models.Team{Name: req.Name, Description: req.Description, Members: req.Members, Groups: req.Groups, Role: req.Role,
		Namespaces: req.Namespaces, BoundMembers: req.Members}
	f.teams[req.Name] = &t
	return t, nil
}

func (f *fakeTeams) Update(_ context.Context, c *services.Caller, name string, req models.UpdateTeamRequest) (models.Team, error) {
	if err := forbidUnlessAdmin(c); err != nil {
		return models.Team{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.teams[name]
	t.Members, t.Groups, t.Namespaces, t.Role, t.Description = *req.Members, *req.Groups, *req.Namespaces, *req.Role, *req.Description
	return *t, nil
}

func (f *fakeTeams) Delete(_ context.Context, c *services.Caller, name string) error {
	if err := forbidUnlessAdmin(c); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.teams, name)
	return nil
}

func (f *fakeTeams) Of(_ context.Context, u *portalv1alpha1.User) ([]models.TeamMembership, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []models.TeamMembership
	for _, t := range f.teams {
		if slices.Contains(t.Members, u.Spec.Username) {
			out = append(out, models.TeamMembership{Name: t.Name, Role: t.Role, Namespaces: t.Namespaces})
		}
	}
	return out, nil
}

func TestTeamsPage(t *testing.T) {
	teams := &fakeTeams{teams: map[string]*models.Team{}}
	h := newHarnessWith(t, func(o *Options) { o.Teams = teams })
	adm := h.as("admin")
	a := adm.get(Prefix + "/teams")
	wantStatus(t, a, http.StatusOK, "the teams page")
	wantIn(t, a.body, "the teams page", `id="new-team-form"`, `id="no-teams"`, `<a href="/ui/teams">Teams</a>`)

	a = adm.post(Prefix+"/teams", url.Values{"name": {"payments"}, "role": {"developer"}, "members": {"dev, nobody"},
		"groups": {"pay-devs"}, "namespaces": {"pay kube-system"}})
	wantStatus(t, a, http.StatusUnprocessableEntity, "a protected namespace")
	wantIn(t, a.body, "a protected namespace", `namespaces[0]: namespace &#34;kube-system&#34; is protected`, `value="payments"`, `value="dev, nobody"`)

	a = adm.post(Prefix+"/teams", url.Values{"name": {"payments"}, "role": {"developer"}, "members": {"dev, nobody"},
		"groups": {"pay-devs"}, "namespaces": {"pay"}})
	wantStatus(t, a, http.StatusSeeOther, "creating a team")
	if got := teams.teams["payments"]; got == nil || !slices.Equal(got.Members, []string{"dev", "nobody"}) || !slices.Equal(got.Namespaces, []string{"pay"}) {
		t.Fatalf("created team %+v: want members dev and nobody in pay", got)
	}
	a = adm.get(Prefix + "/teams?notice=teamsaved")
	wantIn(t, a.body, "the teams page", `data-team="payments"`, `Bound now: dev, nobody`, `action="/ui/teams/payments"`, `Delete payments`)

	a = adm.post(Prefix+"/teams/payments", url.Values{"role": {"auditor"}, "members": {"nobody"}, "groups": {""}, "namespaces": {"pay, pay-stage"}, "description": {"x"}})
	wantStatus(t, a, http.StatusSeeOther, "editing a team")
	if got := teams.teams["payments"]; got.Role != "auditor" || !slices.Equal(got.Members, []string{"nobody"}) || len(got.Groups) != 0 {
		t.Fatalf("edited team %+v", got)
	}

	// The member sees its team on the account page; a non-member sees none.
	wantIn(t, h.as("nobody").get(Prefix+"/account").body, "a member's account page", `data-team="payments"`, `<a href="/ui/ns/pay-stage">pay-stage</a>`)
	wantNotIn(t, h.as("dev").get(Prefix+"/account").body, "a non-member's account page", `data-team=`)

	// The auditor reads the teams without a control; its change is refused all the same.
	a = h.as("auditor").get(Prefix + "/teams")
	wantStatus(t, a, http.StatusOK, "the auditor's teams page")
	wantIn(t, a.body, "the auditor's teams page", `data-team="payments"`)
	wantNotIn(t, a.body, "the auditor's teams page", `id="new-team-form"`, `action="/ui/teams/payments"`)
	wantStatus(t, h.as("auditor").post(Prefix+"/teams/payments/delete", url.Values{}), http.StatusForbidden, "an auditor deleting a team")

	wantStatus(t, adm.post(Prefix+"/teams/payments/delete", url.Values{}), http.StatusSeeOther, "deleting a team")
	if teams.teams["payments"] != nil {
		t.Fatal("the deleted team is still there")
	}
}
