package ui

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	portalv1alpha1 "github.com/mooringhq/mooring/api/portal/v1alpha1"
	"github.com/mooringhq/mooring/internal/portal/models"
	"github.com/mooringhq/mooring/internal/portal/services"
)

// fakeAccounts keeps users in memory; tokens are "access-<user>-<gen>-<session>" and
// "refresh-<user>-<gen>-<session>", revoked by bumping gen; each login is a session.
type fakeAccounts struct {
	mu       sync.Mutex
	sessions int
	users    map[string]*fakeUser
	updates  []models.UpdateUserRequest
	// expired makes access tokens fail, so that the refresh token is used.
	expired bool
	// logouts counts the calls of Logout.
	logouts int
}

type fakeUser struct {
	u   *portalv1alpha1.User
	pw  string
	gen int
}

func newFakeAccounts() *fakeAccounts { return &fakeAccounts{users: map[string]*fakeUser{}} }

func (f *fakeAccounts) add(name, pw string, role portalv1alpha1.Role, ns ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.users[name] = &fakeUser{pw: pw, u: &portalv1alpha1.User{Spec: portalv1alpha1.UserSpec{
		ID: "id-" + name, Username: name, Email: name + "@example.com", Role: role, Namespaces: ns}}}
}

func (f *fakeAccounts) pair(name string, session int) models.TokenResponse {
	g := f.users[name].gen
	return models.TokenResponse{AccessToken: fmt.Sprintf("access-%s-%d-%d", name, g, session),
		RefreshToken: fmt.Sprintf("refresh-%s-%d-%d", name, g, session), TokenType: "Bearer", ExpiresIn: 60}
}

var errBadLogin = &services.Error{Kind: services.KindUnauthorized, Message: "invalid username or password"}

func (f *fakeAccounts) Register(_ context.Context, req models.RegisterRequest) (models.User, error) {
	if len(req.Password) < 12 {
		return models.User{}, &services.Error{Kind: services.KindInvalid, Message: "invalid input",
			Fields: []models.FieldError{{Field: "password", Message: "must be 12 to 128 characters long"}}}
	}
	f.add(req.Username, req.Password, portalv1alpha1.RoleNone)
	return services.ToModel(f.users[req.Username].u), nil
}

func (f *fakeAccounts) Login(_ context.Context, req models.LoginRequest) (models.TokenResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	u, ok := f.users[req.Username]
	if !ok || u.pw != req.Password {
		return models.TokenResponse{}, errBadLogin
	}
	f.sessions++
	return f.pair(req.Username, f.sessions), nil
}

// parse returns the user and session of a token.
func (f *fakeAccounts) parse(token, typ string) (*fakeUser, int, error) {
	rest, ok := strings.CutPrefix(token, typ+"-")
	i := strings.LastIndex(rest, "-")
	if !ok || i < 0 {
		return nil, 0, errBadLogin
	}
	var session int
	if _, err := fmt.Sscan(rest[i+1:], &session); err != nil {
		return nil, 0, errBadLogin
	}
	rest = rest[:i]
	i = strings.LastIndex(rest, "-")
	if i < 0 {
		return nil, 0, errBadLogin
	}
	u, ok := f.users[rest[:i]]
	if !ok || fmt.Sprint(u.gen) != rest[i+1:] {
		return nil, 0, errBadLogin
	}
	return u, session, nil
}

func (f *fakeAccounts) Refresh(_ context.Context, req models.RefreshRequest) (models.TokenResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	u, session, err := f.parse(req.RefreshToken, "refresh")
	if err != nil {
		return models.TokenResponse{}, err
	}
	return f.pair(u.u.Spec.Username, session), nil
}

func (f *fakeAccounts) Authenticate(_ context.Context, token string) (*services.Caller, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.expired {
		return nil, errBadLogin
	}
	u, session, err := f.parse(token, "access")
	if err != nil {
		return nil, err
	}
	return &services.Caller{User: u.u.DeepCopy(), Session: fmt.Sprint("session-", session)}, nil
}

func (f *fakeAccounts) UpdateMe(_ context.Context, c *services.Caller, req models.UpdateMeRequest) (models.User, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	u := f.users[c.User.Spec.Username]
	if req.Password != nil {
		if req.CurrentPassword == nil || *req.CurrentPassword != u.pw {
			return models.User{}, &services.Error{Kind: services.KindForbidden, Message: "the current password is wrong",
				Fields: []models.FieldError{{Field: "currentPassword", Message: "is wrong"}}}
		}
		u.pw = *req.Password
		u.gen++
	}
	if req.Email != nil {
		if !strings.Contains(*req.Email, "@") {
			return models.User{}, &services.Error{Kind: services.KindInvalid, Message: "invalid input",
				Fields: []models.FieldError{{Field: "email", Message: "must be a plain e-mail address"}}}
		}
		u.u.Spec.Email = *req.Email
	}
	return services.ToModel(u.u), nil
}

// Logout ends every session of the user: the fake knows no sessions.
func (f *fakeAccounts) Logout(_ context.Context, c *services.Caller) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.users[c.User.Spec.Username].gen++
	f.logouts++
	return nil
}

func (f *fakeAccounts) LogoutAll(_ context.Context, c *services.Caller) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.users[c.User.Spec.Username].gen++
	return nil
}

func (f *fakeAccounts) List(_ context.Context, c *services.Caller) (models.UserList, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r := c.User.Spec.Role; r != portalv1alpha1.RoleAdmin && r != portalv1alpha1.RoleAuditor {
		return models.UserList{}, &services.Error{Kind: services.KindForbidden, Message: c.User.Spec.Username + " may not list users"}
	}
	var l models.UserList
	for _, name := range []string{"admin", "auditor", "dev", "nobody"} {
		if u, ok := f.users[name]; ok {
			l.Items = append(l.Items, services.ToModel(u.u))
		}
	}
	return l, nil
}

// ListPage pages List's users in their order; the continue token is the index of the
// next page's first user.
func (f *fakeAccounts) ListPage(ctx context.Context, c *services.Caller, page services.Page) (models.UserList, error) {
	l, err := f.List(ctx, c)
	if err != nil {
		return l, err
	}
	from := 0
	if page.Continue != "" {
		if from, err = strconv.Atoi(page.Continue); err != nil || from > len(l.Items) {
			return models.UserList{}, &services.Error{Kind: services.KindInvalid, Message: "bad continue token " + page.Continue}
		}
	}
	l.Items = l.Items[from:]
	if page.Limit > 0 && int64(len(l.Items)) > page.Limit {
		l.Items = l.Items[:page.Limit]
		l.Metadata.Continue = strconv.Itoa(from + int(page.Limit))
	}
	return l, nil
}

func (f *fakeAccounts) Update(_ context.Context, c *services.Caller, id string, req models.UpdateUserRequest) (models.User, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c.User.Spec.Role != portalv1alpha1.RoleAdmin {
		return models.User{}, &services.Error{Kind: services.KindForbidden, Message: "may not update users"}
	}
	f.updates = append(f.updates, req)
	for _, u := range f.users {
		if u.u.Spec.ID == id {
			for i, ns := range *req.Namespaces {
				if ns == "missing" {
					return models.User{}, &services.Error{Kind: services.KindInvalid, Message: "invalid input",
						Fields: []models.FieldError{{Field: fmt.Sprintf("namespaces[%d]", i), Message: `namespace "missing" does not exist`}}}
				}
			}
			u.u.Spec.Role = portalv1alpha1.Role(*req.Role)
			u.u.Spec.Namespaces = *req.Namespaces
			return services.ToModel(u.u), nil
		}
	}
	return models.User{}, &services.Error{Kind: services.KindNotFound, Message: "no user with id " + id}
}

func (f *fakeAccounts) Unlock(_ context.Context, c *services.Caller, id string) (models.User, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c.User.Spec.Role != portalv1alpha1.RoleAdmin {
		return models.User{}, &services.Error{Kind: services.KindForbidden, Message: "may not update users"}
	}
	for _, u := range f.users {
		if u.u.Spec.ID == id {
			u.u.Status.ClientLockouts = nil
			return services.ToModel(u.u), nil
		}
	}
	return models.User{}, &services.Error{Kind: services.KindNotFound, Message: "no user with id " + id}
}

// fakeResources keeps objects in memory and records patches.
type fakeResources struct {
	mu      sync.Mutex
	objs    map[string]*unstructured.Unstructured
	events  []corev1.Event
	patches []string
	deleted []string
	runs    []string
	// lists counts the calls of List.
	lists int
}

func newFakeResources() *fakeResources {
	return &fakeResources{objs: map[string]*unstructured.Unstructured{}}
}

func key(ns, kind, name string) string { return ns + "/" + kind + "/" + name }

func (f *fakeResources) put(ns, kind string, obj map[string]any) {
	u := &unstructured.Unstructured{Object: obj}
	u.SetNamespace(ns)
	f.objs[key(ns, kind, u.GetName())] = u
}

func (f *fakeResources) Namespaces(_ context.Context, c *services.Caller) (models.NamespaceList, error) {
	return models.NamespaceList{Items: append([]string{}, c.User.Spec.Namespaces...)}, nil
}

func (f *fakeResources) List(_ context.Context, _ *services.Caller, ns, kind string) (*unstructured.UnstructuredList, error) {
	f.mu.Lock()
	f.lists++
	defer f.mu.Unlock()
	l := &unstructured.UnstructuredList{}
	for k, o := range f.objs {
		if strings.HasPrefix(k, ns+"/"+kind+"/") {
			l.Items = append(l.Items, *o.DeepCopy())
		}
	}
	// The API server lists a namespace's objects by name; so does the fake.
	slices.SortFunc(l.Items, func(a, b unstructured.Unstructured) int { return strings.Compare(a.GetName(), b.GetName()) })
	return l, nil
}

func (f *fakeResources) Get(_ context.Context, _ *services.Caller, ns, kind, name string) (*unstructured.Unstructured, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	o, ok := f.objs[key(ns, kind, name)]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: "mooring.dev", Resource: kind}, name)
	}
	return o.DeepCopy(), nil
}

// invalidImage is what the operator's webhook answers for an image that is not a
// reference.
func invalidImage(obj map[string]any) error {
	img, _, _ := unstructured.NestedString(obj, "spec", "image")
	if !strings.ContainsAny(img, "! ") {
		return nil
	}
	return apierrors.NewInvalid(schema.GroupKind{Group: "mooring.dev", Kind: "App"}, "x",
		field.ErrorList{field.Invalid(field.NewPath("spec", "image"), img, "is not a valid image reference")})
}

func (f *fakeResources) Create(_ context.Context, _ *services.Caller, ns, kind string, body map[string]any) (*unstructured.Unstructured, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := invalidImage(body); err != nil {
		return nil, err
	}
	f.put(ns, kind, body)
	return &unstructured.Unstructured{Object: body}, nil
}

// Update replaces the object as Create stores it: the fake keeps no versions.
func (f *fakeResources) Update(ctx context.Context, c *services.Caller, ns, kind, _ string, body map[string]any) (*unstructured.Unstructured, error) {
	return f.Create(ctx, c, ns, kind, body)
}

func (f *fakeResources) Patch(_ context.Context, _ *services.Caller, ns, kind, name string, patch []byte) (*unstructured.Unstructured, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var probe map[string]any
	if err := json.Unmarshal(patch, &probe); err != nil {
		return nil, err
	}
	f.patches = append(f.patches, key(ns, kind, name)+" "+string(patch))
	return &unstructured.Unstructured{}, nil
}

func (f *fakeResources) Delete(_ context.Context, _ *services.Caller, ns, kind, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deleted = append(f.deleted, key(ns, kind, name))
	return nil
}

func (f *fakeResources) RunBackup(_ context.Context, _ *services.Caller, ns, name string) (*unstructured.Unstructured, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.runs = append(f.runs, ns+"/"+name)
	return &unstructured.Unstructured{}, nil
}

func (f *fakeResources) Events(_ context.Context, _ *services.Caller, _ string) (*corev1.EventList, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return &corev1.EventList{Items: append([]corev1.Event{}, f.events...)}, nil
}

// fakePermissions gives each role the rules of its ClusterRole, roughly.
type fakePermissions struct{}

func (fakePermissions) Access(_ context.Context, c *services.Caller, _ string) (Access, error) {
	read := []string{"get", "list", "watch"}
	all := append(read, "create", "update", "patch", "delete")
	mooring := []string{"apps", "cacheinstances", "databaseclusters", "backups"}
	switch c.User.Spec.Role {
	case portalv1alpha1.RoleAdmin:
		return Access{Rules: []authorizationv1.ResourceRule{{Verbs: all, APIGroups: []string{"mooring.dev"}, Resources: mooring},
			{Verbs: append(read, "update", "delete"), APIGroups: []string{"portal.mooring.dev"}, Resources: []string{"users"}},
			{Verbs: all, APIGroups: []string{"portal.mooring.dev"}, Resources: []string{"teams"}}}}, nil
	case portalv1alpha1.RoleDeveloper:
		return Access{Rules: []authorizationv1.ResourceRule{{Verbs: all, APIGroups: []string{"mooring.dev"}, Resources: mooring}}}, nil
	case portalv1alpha1.RoleAuditor:
		return Access{Rules: []authorizationv1.ResourceRule{{Verbs: read, APIGroups: []string{"*"}, Resources: []string{"*"}}}}, nil
	}
	return Access{}, nil
}

func unstructuredSet(obj map[string]any, value any, path ...string) error {
	return unstructured.SetNestedField(obj, value, path...)
}
