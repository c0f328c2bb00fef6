package server_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	portalv1alpha1 "github.com/mooringhq/mooring/api/portal/v1alpha1"
	"github.com/mooringhq/mooring/internal/portal/models"
	"github.com/mooringhq/mooring/internal/portal/portaltest"
	"github.com/mooringhq/mooring/internal/testutil"
)

// teamName is a fresh team name (a DNS label of at most 43 characters).
func teamName() string {
	return strings.ReplaceAll(portaltest.UniqueName("team"), "_", "-")
}

// canCreateApp polls until the holder of tok gets want when creating an App in ns
// (RBAC caches of the API server take a moment after a binding changes).
func canCreateApp(t *testing.T, p *portal, tok, ns string, want int, what string) {
	t.Helper()
	n := 0
	testutil.Eventually(t, 20*time.Second, what, func() error {
		n++
		r := p.Do("POST", "/api/v1/namespaces/"+ns+"/apps", tok, portaltest.App(fmt.Sprintf("app-%d-%d", time.Now().UnixNano()%1e6, n)))
		if r.Status != want {
			return fmt.Errorf("create an App in %s: %d %s, want %d", ns, r.Status, r.Body, want)
		}
		return nil
	})
}

func teamBindingSubjects(t *testing.T, team string) map[string][]string {
	t.Helper()
	var l rbacv1.RoleBindingList
	if err := admin.List(context.Background(), &l, client.MatchingLabels{portalv1alpha1.TeamLabel: team}); err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, b := range l.Items {
		for _, s := range b.Subjects {
			out[b.Namespace] = append(out[b.Namespace], s.Name)
		}
		if b.Subjects == nil {
			out[b.Namespace] = []string{}
		}
	}
	return out
}

// TestTeamGrantsReachRBAC: a team's role reaches its members through the API server's
// RBAC, named or by single sign-on group, and goes when they leave or the team goes;
// non-members are refused by the API server, not by the portal.
func TestTeamGrantsReachRBAC(t *testing.T) {
	p := newPortal(t, nil)
	adm := p.adminToken()
	ns, nsOther := env.Namespace(t), env.Namespace(t)
	member, memberPw := p.Register("member")
	other, otherPw := p.Register("other")
	sso, ssoPw := p.Register("sso")
	memberTok, otherTok := p.Login(member.Username, memberPw).AccessToken, p.Login(other.Username, otherPw).AccessToken

	name := teamName()
	r := p.Do("POST", "/api/v1/teams", adm, models.CreateTeamRequest{Name: name, Description: "payments",
		Members: []string{strings.ToUpper(member.Username)}, Role: "developer", Namespaces: []string{ns}})
	portaltest.Expect(t, r, http.StatusCreated, "an admin creates a team")
	var team models.Team
	if r.Decode(t, &team); !slices.Equal(team.Members, []string{member.Username}) || team.Role != "developer" ||
		!slices.Equal(team.BoundMembers, []string{member.Username}) {
		t.Fatalf("created team %+v: want the member lower-cased, bound, and the role developer", team)
	}
	if got := teamBindingSubjects(t, name); len(got) != 1 || !slices.Equal(got[ns], []string{"u-" + member.ID}) {
		t.Fatalf("team bindings %v: want one in %s naming the member's identity", got, ns)
	}

	canCreateApp(t, p, memberTok, ns, http.StatusCreated, "a team member creates an App in the team's namespace")
	canCreateApp(t, p, otherTok, ns, http.StatusForbidden, "a non-member is refused by the API server")
	canCreateApp(t, p, memberTok, nsOther, http.StatusForbidden, "a member is refused outside the team's namespaces")

	// The member sees the team and its namespace.
	var me models.User
	r = p.Do("GET", "/api/v1/users/me", memberTok, nil)
	portaltest.Expect(t, r, http.StatusOK, "the member's account")
	if r.Decode(t, &me); len(me.Teams) != 1 || me.Teams[0].Name != name || !slices.Equal(me.Teams[0].Namespaces, []string{ns}) {
		t.Fatalf("the member's teams %+v: want %s in %s", me.Teams, name, ns)
	}
	var nsl models.NamespaceList
	r = p.Do("GET", "/api/v1/namespaces", memberTok, nil)
	portaltest.Expect(t, r, http.StatusOK, "the member's namespaces")
	if r.Decode(t, &nsl); !slices.Equal(nsl.Items, []string{ns}) {
		t.Fatalf("the member's namespaces %v, want [%s]", nsl.Items, ns)
	}
	r = p.Do("GET", "/api/v1/users/me", otherTok, nil)
	portaltest.Expect(t, r, http.StatusOK, "the non-member's account")
	var otherMe models.User
	if r.Decode(t, &otherMe); len(otherMe.Teams) != 0 {
		t.Fatalf("a non-member's teams: %+v", otherMe.Teams)
	}

	// Removing the member revokes.
	r = p.Do("PATCH", "/api/v1/teams/"+name, adm, models.UpdateTeamRequest{Members: &[]string{}})
	portaltest.Expect(t, r, http.StatusOK, "the admin removes the member")
	canCreateApp(t, p, memberTok, ns, http.StatusForbidden, "a removed member is refused")

	// A single sign-on account whose groups claim names the team's group is a member.
	group := "payments-" + name
	// Logged in before the account is marked single sign-on: a password login to one is refused.
	ssoTok := p.Login(sso.Username, ssoPw).AccessToken
	u := &portalv1alpha1.User{}
	testutil.Update(t, admin, client.ObjectKey{Name: sso.Username}, u, func(o *portalv1alpha1.User) {
		o.Spec.SSO = &portalv1alpha1.SSOIdentity{Issuer: "https://idp.example.com", Subject: sso.ID}
	})
	u.Status.Groups = []string{"everyone", group}
	if err := admin.Status().Update(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	r = p.Do("PATCH", "/api/v1/teams/"+name, adm, models.UpdateTeamRequest{Groups: &[]string{group}})
	portaltest.Expect(t, r, http.StatusOK, "the admin adds a group")
	if r.Decode(t, &team); !slices.Equal(team.Groups, []string{group}) {
		t.Fatalf("team groups %v", team.Groups)
	}
	canCreateApp(t, p, ssoTok, ns, http.StatusCreated, "a user in the team's group creates an App")

	// Deleting the team revokes.
	portaltest.Expect(t, p.Do("DELETE", "/api/v1/teams/"+name, adm, nil), http.StatusNoContent, "the admin deletes the team")
	canCreateApp(t, p, ssoTok, ns, http.StatusForbidden, "the deleted team's member is refused")
	if got := teamBindingSubjects(t, name); len(got) != 0 {
		t.Fatalf("the deleted team left bindings: %v", got)
	}
	portaltest.Expect(t, p.Do("GET", "/api/v1/teams/"+name, adm, nil), http.StatusNotFound, "the deleted team")
}

// TestTeamInputRefused: protected namespaces, unknown members, bad names and roles are
// refused naming the field; a caller without rights on teams, or without bind on the
// role, is refused; auditors read teams.
func TestTeamInputRefused(t *testing.T) {
	p := newPortal(t, nil)
	adm := p.adminToken()
	ns := env.Namespace(t)
	member, _ := p.Register("member")

	field := func(r portaltest.Reply, want string, what string) {
		t.Helper()
		portaltest.Expect(t, r, http.StatusUnprocessableEntity, what)
		e := r.Error(t)
		for _, f := range e.Fields {
			if f.Field == want {
				return
			}
		}
		t.Fatalf("%s: want a field error on %s, got %+v", what, want, e)
	}
	createTeam := func(tok string, req models.CreateTeamRequest) portaltest.Reply {
		return p.Do("POST", "/api/v1/teams", tok, req)
	}
	field(createTeam(adm, models.CreateTeamRequest{Name: teamName(), Role: "developer", Members: []string{member.Username},
		Namespaces: []string{ns, "kube-system"}}), "namespaces[1]", "a kube-* namespace")
	field(createTeam(adm, models.CreateTeamRequest{Name: teamName(), Role: "developer", Namespaces: []string{"mooring-portal"}}),
		"namespaces[0]", "the portal's namespace")
	field(createTeam(adm, models.CreateTeamRequest{Name: teamName(), Role: "developer", Members: []string{member.Username, "nobody-" + member.Username},
		Namespaces: []string{ns}}), "members[1]", "an unknown member")
	field(createTeam(adm, models.CreateTeamRequest{Name: teamName(), Role: "admin"}), "role", "a team making admins")
	field(createTeam(adm, models.CreateTeamRequest{Name: strings.Repeat("a", 44), Role: "auditor"}), "name", "a name too long for its bindings")
	field(createTeam(adm, models.CreateTeamRequest{Name: teamName(), Role: "developer", Namespaces: []string{"no-such-namespace-" + member.ID[:8]}}),
		"namespaces[0]", "a namespace that does not exist")
	var l models.TeamList
	r := p.Do("GET", "/api/v1/teams", adm, nil)
	portaltest.Expect(t, r, http.StatusOK, "list teams")
	for r.Decode(t, &l); len(l.Items) > 0; l.Items = l.Items[1:] {
		if slices.Contains(l.Items[0].Members, member.Username) {
			t.Fatalf("a refused team was stored: %+v", l.Items[0])
		}
	}

	// A developer may not manage teams at all.
	dev, devPw := p.Register("dev")
	p.Grant(adm, dev.ID, "developer", ns)
	devTok := p.Login(dev.Username, devPw).AccessToken
	refused := createTeam(devTok, models.CreateTeamRequest{Name: teamName(), Role: "developer", Members: []string{dev.Username}, Namespaces: []string{ns}})
	portaltest.Expect(t, refused, http.StatusForbidden, "a developer creating a team")
	portaltest.Expect(t, p.Do("GET", "/api/v1/teams", devTok, nil), http.StatusForbidden, "a developer listing teams")

	// Given create on teams but no bind, the developer still may not grant developer.
	crName := "test-team-creator-" + dev.ID
	create(t, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: crName}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"portal.mooring.dev"}, Resources: []string{"teams"}, Verbs: []string{"get", "list", "create"}},
	}})
	create(t, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: crName},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: crName},
		Subjects: userSubject(dev.ID)})
	testutil.Eventually(t, 10*time.Second, "the developer's right to list teams", func() error {
		if r := p.Do("GET", "/api/v1/teams", devTok, nil); r.Status != http.StatusOK {
			return errorf("list teams: %d %s", r.Status, r.Body)
		}
		return nil
	})
	name := teamName()
	r = createTeam(devTok, models.CreateTeamRequest{Name: name, Role: "developer", Members: []string{dev.Username, member.Username}, Namespaces: []string{ns}})
	portaltest.Expect(t, r, http.StatusForbidden, "a team creator without bind granting developer")
	if e := r.Error(t); !strings.Contains(e.Message, "developer") {
		t.Fatalf("want a Forbidden naming the role, got %+v", e)
	}
	portaltest.Expect(t, p.Do("GET", "/api/v1/teams/"+name, adm, nil), http.StatusNotFound, "the refused team")

	// Auditors read teams and change none.
	aud, audPw := p.Register("aud")
	p.Grant(adm, aud.ID, "auditor")
	audTok := p.Login(aud.Username, audPw).AccessToken
	name = teamName()
	portaltest.Expect(t, createTeam(adm, models.CreateTeamRequest{Name: name, Role: "auditor", Members: []string{member.Username}, Namespaces: []string{ns}}),
		http.StatusCreated, "an admin creates an auditors' team")
	t.Cleanup(func() { p.Do("DELETE", "/api/v1/teams/"+name, adm, nil) })
	testutil.Eventually(t, 10*time.Second, "the auditor reads the team", func() error {
		if r := p.Do("GET", "/api/v1/teams/"+name, audTok, nil); r.Status != http.StatusOK {
			return errorf("get the team: %d %s", r.Status, r.Body)
		}
		return nil
	})
	portaltest.Expect(t, p.Do("PATCH", "/api/v1/teams/"+name, audTok, models.UpdateTeamRequest{Members: &[]string{aud.Username}}),
		http.StatusForbidden, "an auditor adding itself to a team")
	portaltest.Expect(t, p.Do("DELETE", "/api/v1/teams/"+name, audTok, nil), http.StatusForbidden, "an auditor deleting a team")
}
