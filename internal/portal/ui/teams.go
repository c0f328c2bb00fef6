package ui

import (
	"context"
	"net/http"
	"strings"
	"unicode"

	"github.com/gin-gonic/gin"

	portalv1alpha1 "github.com/mooringhq/mooring/api/portal/v1alpha1"
	"github.com/mooringhq/mooring/internal/portal/models"
	"github.com/mooringhq/mooring/internal/portal/services"
)

// Teams is what the UI needs of the teams service (services.Teams).
type Teams interface {
	List(ctx context.Context, caller *services.Caller) (models.TeamList, error)
	Create(ctx context.Context, caller *services.Caller, req models.CreateTeamRequest) (models.Team, error)
	Update(ctx context.Context, caller *services.Caller, name string, req models.UpdateTeamRequest) (models.Team, error)
	Delete(ctx context.Context, caller *services.Caller, name string) error
	Of(ctx context.Context, u *portalv1alpha1.User) ([]models.TeamMembership, error)
}

// teamRoles are the roles a team may grant, in the form's order.
var teamRoles = []string{"developer", "auditor"}

// teamsData is the teams page: every team, editable when RBAC lets the caller update
// teams, and a form for a new one when it may create them.
type teamsData struct {
	Teams     []models.Team
	CanEdit   bool
	CanCreate bool
	Roles     []string
	// New is what the new-team form was given, shown again when it failed.
	New models.CreateTeamRequest
	// Fields holds the errors of the form that failed: the team FailedName, or the
	// new-team form when FailedName is empty and NewFailed is set.
	FailedName string
	NewFailed  bool
	Fields     map[string]string
}

// listField splits a form field of names separated by commas or white space.
func listField(c *gin.Context, name string) []string {
	l := strings.FieldsFunc(c.PostForm(name), func(r rune) bool { return r == ',' || unicode.IsSpace(r) })
	if l == nil {
		l = []string{}
	}
	return l
}

func (u *UI) teamsPage(c *gin.Context) {
	u.showTeams(c, http.StatusOK, "", teamsData{})
}

func (u *UI) showTeams(c *gin.Context, status int, errMsg string, data teamsData) {
	cl := caller(c)
	l, err := u.o.Teams.List(c.Request.Context(), cl)
	if err != nil {
		u.fail(c, err)
		return
	}
	acc, err := u.o.Permissions.Access(c.Request.Context(), cl, "default")
	if err != nil {
		u.fail(c, err)
		return
	}
	data.Teams, data.CanEdit, data.CanCreate, data.Roles = l.Items, acc.CanTeams("update"), acc.CanTeams("create"), teamRoles
	if data.New.Role == "" {
		data.New.Role = "developer"
	}
	u.render(c, status, "teams", page{Title: "Teams", Notice: noticeOf(c), Error: errMsg, Data: data})
}

func (u *UI) createTeam(c *gin.Context) {
	req := models.CreateTeamRequest{Name: strings.TrimSpace(c.PostForm("name")), Description: c.PostForm("description"),
		Members: listField(c, "members"), Groups: listField(c, "groups"), Role: c.PostForm("role"), Namespaces: listField(c, "namespaces")}
	if _, err := u.o.Teams.Create(c.Request.Context(), caller(c), req); err != nil {
		p := describe(c.Request.Context(), err)
		u.showTeams(c, p.Status, p.Message, teamsData{New: req, NewFailed: true, Fields: p.Fields})
		return
	}
	c.Redirect(http.StatusSeeOther, Prefix+"/teams?notice=teamsaved")
}

func (u *UI) updateTeam(c *gin.Context) {
	desc, role := c.PostForm("description"), c.PostForm("role")
	members, groups, namespaces := listField(c, "members"), listField(c, "groups"), listField(c, "namespaces")
	req := models.UpdateTeamRequest{Description: &desc, Members: &members, Groups: &groups, Role: &role, Namespaces: &namespaces}
	if _, err := u.o.Teams.Update(c.Request.Context(), caller(c), c.Param("name"), req); err != nil {
		p := describe(c.Request.Context(), err)
		u.showTeams(c, p.Status, p.Message, teamsData{FailedName: c.Param("name"), Fields: p.Fields})
		return
	}
	c.Redirect(http.StatusSeeOther, Prefix+"/teams?notice=teamsaved")
}

func (u *UI) deleteTeam(c *gin.Context) {
	if err := u.o.Teams.Delete(c.Request.Context(), caller(c), c.Param("name")); err != nil {
		p := describe(c.Request.Context(), err)
		u.showTeams(c, p.Status, p.Message, teamsData{FailedName: c.Param("name"), Fields: p.Fields})
		return
	}
	c.Redirect(http.StatusSeeOther, Prefix+"/teams?notice=teamdeleted")
}
