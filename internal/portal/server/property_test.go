package server_test

import (
	"flag"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/mooringhq/mooring/internal/portal/models"
	"github.com/mooringhq/mooring/internal/portal/portaltest"
	"github.com/mooringhq/mooring/internal/portal/services"
)

// modelUser is what the model knows of an account.
type modelUser struct {
	id, password, role string
	namespaces         []string
	token              string
}

// portalModel is the state machine: register, login, role changes, deletion and
// resource calls, each checked against what the model says the portal must answer.
type portalModel struct {
	t      *testing.T
	p      *portal
	admin  string
	prefix string
	nsA    string
	nsB    string
	users  map[string]*modelUser
	apps   int
	// steps counts the requests made, for the log.
	steps int
	// seen collects every password the run used, to look for in bodies and logs.
	seen []string
}

var candidatePasswords = []string{"short", "a good long password", "another long password!", strings.Repeat("x", 129)}

func (m *portalModel) name(t *rapid.T) string {
	return m.prefix + "-" + rapid.SampledFrom([]string{"ann", "ben", "cy"}).Draw(t, "user")
}

func (m *portalModel) expect(t *rapid.T, r portaltest.Reply, want int, what string) {
	m.steps++
	if r.Status != want {
		t.Fatalf("%s: want %d, got %d: %s", what, want, r.Status, r.Body)
	}
	if strings.Contains(string(r.Body), "$argon2id$") {
		t.Fatalf("%s: a password hash in the body", what)
	}
	for _, pw := range m.seen {
		if len(pw) >= services.MinPasswordLen && strings.Contains(string(r.Body), pw) {
			t.Fatalf("%s: a password in the body", what)
		}
	}
}

// Check is the invariant after every step: the logged-in users' own views match the
// model's role and namespaces. (One request per user per step: the runs stay small.)
func (m *portalModel) Check(t *rapid.T) {
	for name, u := range m.users {
		if u.token == "" {
			continue
		}
		r := m.p.Do("GET", "/api/v1/users/me", u.token, nil)
		m.expect(t, r, http.StatusOK, name+" reads itself")
		var me models.User
		r.Decode(m.t, &me)
		if me.Role != u.role || !slices.Equal(me.Namespaces, sorted(u.namespaces)) {
			t.Fatalf("%s: the portal says role %s %v, the model %s %v", name, me.Role, me.Namespaces, u.role, u.namespaces)
		}
	}
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	if out == nil {
		out = []string{}
	}
	return out
}

// existing draws a registered user, registering one first when there is none, so
// that no step is wasted.
func (m *portalModel) existing(t *rapid.T) (string, *modelUser) {
	if len(m.users) == 0 {
		name := m.prefix + "-first"
		pw := "the first long password"
		m.expect(t, m.p.Do("POST", "/api/v1/users", "", models.RegisterRequest{Username: name, Email: name + "@example.com", Password: pw}), http.StatusCreated, "register")
		u := &modelUser{password: pw, role: "none"}
		r := m.p.Do("GET", "/api/v1/users", m.admin, nil)
		var l models.UserList
		r.Decode(m.t, &l)
		for _, it := range l.Items {
			if it.Username == name {
				u.id = it.ID
			}
		}
		m.users[name] = u
	}
	names := make([]string, 0, len(m.users))
	for n := range m.users {
		names = append(names, n)
	}
	slices.Sort(names)
	name := rapid.SampledFrom(names).Draw(t, "existing user")
	u := m.users[name]
	if u.token == "" {
		r := m.p.Do("POST", "/api/v1/login", "", models.LoginRequest{Username: name, Password: u.password})
		m.expect(t, r, http.StatusOK, "login")
		var tok models.TokenResponse
		r.Decode(m.t, &tok)
		u.token = tok.AccessToken
	}
	return name, u
}

func (m *portalModel) Register(t *rapid.T) {
	name := m.name(t)
	pw := rapid.SampledFrom(candidatePasswords).Draw(t, "password")
	m.seen = append(m.seen, pw)
	r := m.p.Do("POST", "/api/v1/users", "", models.RegisterRequest{Username: name, Email: name + "@example.com", Password: pw})
	switch {
	case len(pw) < services.MinPasswordLen || len(pw) > services.MaxPasswordLen:
		m.expect(t, r, http.StatusUnprocessableEntity, "register with a bad password")
	case m.users[name] != nil:
		m.expect(t, r, http.StatusConflict, "register a taken name")
	default:
		m.expect(t, r, http.StatusCreated, "register")
		var u models.User
		r.Decode(m.t, &u)
		m.users[name] = &modelUser{id: u.ID, password: pw, role: "none"}
	}
}

func (m *portalModel) Login(t *rapid.T) {
	name := m.name(t)
	u := m.users[name]
	right := u != nil && rapid.Bool().Draw(t, "right password")
	pw := "not the password at all"
	if right {
		pw = u.password
	}
	r := m.p.Do("POST", "/api/v1/login", "", models.LoginRequest{Username: name, Password: pw})
	if !right {
		m.expect(t, r, http.StatusUnauthorized, "login with a wrong password or unknown user")
		return
	}
	m.expect(t, r, http.StatusOK, "login")
	var tok models.TokenResponse
	r.Decode(m.t, &tok)
	u.token = tok.AccessToken
}

func (m *portalModel) Grant(t *rapid.T) {
	_, u := m.existing(t)
	role := rapid.SampledFrom([]string{"none", "developer", "auditor", "admin"}).Draw(t, "role")
	req := models.UpdateUserRequest{Role: &role}
	var nss []string
	if role == "developer" {
		nss = rapid.SliceOfDistinct(rapid.SampledFrom([]string{m.nsA, m.nsB}), rapid.ID[string]).Draw(t, "namespaces")
		req.Namespaces = &nss
	}
	r := m.p.Do("PATCH", "/api/v1/users/"+u.id, m.admin, req)
	m.expect(t, r, http.StatusOK, "grant "+role+" to "+u.id)
	u.role, u.namespaces = role, nss
}

func (m *portalModel) Delete(t *rapid.T) {
	name, u := m.existing(t)
	m.expect(t, m.p.Do("DELETE", "/api/v1/users/"+u.id, m.admin, nil), http.StatusNoContent, "delete")
	if u.token != "" {
		m.expect(t, m.p.Do("GET", "/api/v1/users/me", u.token, nil), http.StatusUnauthorized, "a deleted user's token")
	}
	delete(m.users, name)
}

func (m *portalModel) Resources(t *rapid.T) {
	_, u := m.existing(t)
	ns := rapid.SampledFrom([]string{m.nsA, m.nsB}).Draw(t, "namespace")
	inNS := u.role == "admin" || (u.role == "developer" && slices.Contains(u.namespaces, ns))
	canRead := inNS || u.role == "auditor"
	want := func(ok bool, yes int) int {
		if ok {
			return yes
		}
		return http.StatusForbidden
	}
	m.expect(t, m.p.Do("GET", "/api/v1/namespaces/"+ns+"/apps", u.token, nil), want(canRead, http.StatusOK), u.role+" lists Apps in "+ns)
	m.apps++
	m.expect(t, m.p.Do("POST", "/api/v1/namespaces/"+ns+"/apps", u.token, portaltest.App(fmt.Sprintf("%s-%d", m.prefix, m.apps))),
		want(inNS, http.StatusCreated), u.role+" creates an App in "+ns)
	m.expect(t, m.p.Do("GET", "/api/v1/users", u.token, nil), want(u.role == "admin" || u.role == "auditor", http.StatusOK), u.role+" lists users")
}

func TestPropertyPortalMatchesModel(t *testing.T) {
	// Each step costs Argon2id work and API calls: keep the run within its budget.
	for name, v := range map[string]string{"rapid.checks": "4", "rapid.steps": "10"} {
		if f := flag.Lookup(name); f != nil && f.Value.String() == f.DefValue {
			if err := flag.Set(name, v); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The admin's one access token must outlive the run, which takes about a minute on
	// a loaded machine (with the suite's 1-minute tokens it expired at 62s in make test).
	p := newPortal(t, func(c *Config) { c.Lockout.Threshold, c.AccessTTL = 1000, 10*time.Minute })
	adm := p.adminToken()
	nsA, nsB := env.Namespace(t), env.Namespace(t)
	var all []string
	run, steps := 0, 0
	rapid.Check(t, func(rt *rapid.T) {
		run++
		m := &portalModel{t: t, p: p, admin: adm, prefix: fmt.Sprintf("r%d-%s", run, strings.ToLower(rapid.StringMatching(`[a-z]{4}`).Draw(rt, "run"))),
			nsA: nsA, nsB: nsB, users: map[string]*modelUser{}}
		rt.Repeat(rapid.StateMachineActions(m))
		all = append(all, m.seen...)
		steps += m.steps
	})
	t.Logf("%d runs, %d checked requests", run, steps)
	if steps < 20 {
		t.Fatalf("only %d requests were checked: the state machine did not run", steps)
	}
	out := logs.String()
	if strings.Contains(out, "$argon2id$") {
		t.Fatal("a password hash appeared in the logs")
	}
	for _, pw := range all {
		if len(pw) >= services.MinPasswordLen && strings.Contains(out, pw) {
			t.Fatalf("a password appeared in the logs")
		}
	}
}
