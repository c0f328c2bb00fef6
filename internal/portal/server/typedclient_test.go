package server_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/mooringhq/mooring/internal/portal/client"
	"github.com/mooringhq/mooring/internal/portal/portaltest"
	"github.com/mooringhq/mooring/internal/testutil"
)

// typedClient is the generated client of internal/portal/client talking to p through p's
// validating transport, sending token as its bearer token when it is not empty.
func typedClient(t *testing.T, p *portal, token string) *client.ClientWithResponses {
	t.Helper()
	opts := []client.ClientOption{client.WithHTTPClient(p.HTTP)}
	if token != "" {
		opts = append(opts, client.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
			r.Header.Set("Authorization", "Bearer "+token)
			return nil
		}))
	}
	c, err := client.NewClientWithResponses(p.URL, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// status fails t unless the exchange answered want.
func status(t *testing.T, what string, resp interface{ StatusCode() int }, body []byte, err error, want int) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if got := resp.StatusCode(); got != want {
		t.Fatalf("%s: want %d, got %d: %s", what, want, got, body)
	}
}

// The portal's API walk — register, log in, be granted a namespace, create Apps, read,
// page through, patch and delete them — through the client oapi-codegen generated from
// the served document. The client's types come from the document, and the document's
// kinds from the CRDs: a schema that does not fit what the portal answers fails here (a
// typed field decoded wrong, or a response the validating transport refuses).
func TestTypedClientWalksTheAPI(t *testing.T) {
	p := newPortal(t, nil)
	ctx := context.Background()
	ns := env.Namespace(t)
	anon := typedClient(t, p, "")

	username, password := portaltest.UniqueName("typed"), "typed-client-password"
	reg, err := anon.RegisterWithResponse(ctx, client.RegisterRequest{Username: username, Email: username + "@example.com", Password: password})
	status(t, "register", reg, reg.Body, err, http.StatusCreated)
	if reg.JSON201.Username != username || reg.JSON201.Role != client.UserRoleNone {
		t.Fatalf("register: want %s with role none, got %+v", username, reg.JSON201)
	}
	id := reg.JSON201.Id.String()

	adminLogin, err := anon.LoginWithResponse(ctx, client.LoginRequest{Username: "admin", Password: adminPassword})
	status(t, "admin login", adminLogin, adminLogin.Body, err, http.StatusOK)
	adm := typedClient(t, p, adminLogin.JSON200.AccessToken)
	role := client.UpdateUserRequestRoleDeveloper
	granted, err := adm.UpdateUserWithResponse(ctx, id, client.UpdateUserRequest{Role: &role, Namespaces: &[]string{ns}})
	status(t, "grant developer", granted, granted.Body, err, http.StatusOK)
	if granted.JSON200.Role != client.UserRoleDeveloper || len(granted.JSON200.Namespaces) != 1 || granted.JSON200.Namespaces[0] != ns {
		t.Fatalf("grant: want developer in %s, got %+v", ns, granted.JSON200)
	}

	login, err := anon.LoginWithResponse(ctx, client.LoginRequest{Username: username, Password: password})
	status(t, "login", login, login.Body, err, http.StatusOK)
	if login.JSON200.TokenType != client.Bearer || login.JSON200.ExpiresIn < 1 {
		t.Fatalf("login: want a Bearer token with a lifetime, got %+v", login.JSON200)
	}
	dev := typedClient(t, p, login.JSON200.AccessToken)

	port := int32(8080)
	names := []string{"typed-a", "typed-b", "typed-c"}
	for _, name := range names {
		created, err := dev.CreateAppWithResponse(ctx, ns, client.AppInput{
			Metadata: client.ObjectMeta{Name: name, Labels: &map[string]string{"team": "typed"}},
			Spec:     client.AppSpec{Image: "nginx:1.27", Port: &port},
		})
		status(t, "create App "+name, created, created.Body, err, http.StatusCreated)
		app := created.JSON201
		if app.Kind != client.AppKindApp || app.ApiVersion != client.AppApiVersionMooringDevv1 || app.Metadata.Name != name ||
			app.Spec.Image != "nginx:1.27" || app.Spec.Port == nil || *app.Spec.Port != port {
			t.Fatalf("create App %s: want it back as sent, got %+v", name, app)
		}
	}

	got, err := dev.GetAppWithResponse(ctx, ns, "typed-b")
	status(t, "get App", got, got.Body, err, http.StatusOK)
	if got.JSON200.Metadata.Namespace == nil || *got.JSON200.Metadata.Namespace != ns || got.JSON200.Metadata.Labels == nil ||
		(*got.JSON200.Metadata.Labels)["team"] != "typed" {
		t.Fatalf("get App: want typed-b in %s labelled team=typed, got metadata %+v", ns, got.JSON200.Metadata)
	}

	// Two pages of at most two: every App once, none with managedFields (the document's
	// ObjectMeta has none, and allows no other keys: the validating transport also fails
	// on any).
	var listed []string
	params := &client.ListAppsParams{Limit: ptr(2)}
	for page := 1; ; page++ {
		list, err := dev.ListAppsWithResponse(ctx, ns, params)
		status(t, fmt.Sprintf("list Apps, page %d", page), list, list.Body, err, http.StatusOK)
		if n := len(list.JSON200.Items); n > 2 {
			t.Fatalf("list Apps page %d with limit 2: got %d items", page, n)
		}
		if bytes.Contains(list.Body, []byte(`"managedFields"`)) {
			t.Errorf("list Apps page %d carries managedFields: %s", page, list.Body)
		}
		for _, a := range list.JSON200.Items {
			listed = append(listed, a.Metadata.Name)
		}
		if list.JSON200.Metadata == nil || list.JSON200.Metadata.Continue == nil || *list.JSON200.Metadata.Continue == "" {
			if page != 2 {
				t.Fatalf("list Apps with limit 2: want 2 pages for 3 Apps, got %d", page)
			}
			break
		}
		params.Continue = list.JSON200.Metadata.Continue
	}
	if fmt.Sprint(listed) != fmt.Sprint(names) {
		t.Fatalf("list Apps page by page: want %v, got %v", names, listed)
	}

	// Replace what was read, changed: the object read is the object sent. Something may
	// write the App between the read and the replace (409): read again then.
	var replaced *client.ReplaceAppResponse
	testutil.Eventually(t, 30*time.Second, "a replace of the App read just before to answer 200", func() error {
		cur, err := dev.GetAppWithResponse(ctx, ns, "typed-b")
		if err != nil {
			return fmt.Errorf("get: %w", err)
		}
		if cur.JSON200 == nil {
			return fmt.Errorf("get: %d: %s", cur.StatusCode(), cur.Body)
		}
		spec := cur.JSON200.Spec
		spec.Image = "nginx:1.28"
		replaced, err = dev.ReplaceAppWithResponse(ctx, ns, "typed-b", client.AppInput{Metadata: cur.JSON200.Metadata, Spec: spec})
		if err != nil {
			return err
		}
		if replaced.StatusCode() != http.StatusOK {
			if replaced.StatusCode() != http.StatusConflict {
				t.Fatalf("replace App: want 200, got %d: %s", replaced.StatusCode(), replaced.Body)
			}
			return fmt.Errorf("got %d: %s", replaced.StatusCode(), replaced.Body)
		}
		return nil
	})
	if replaced.JSON200.Spec.Image != "nginx:1.28" || replaced.JSON200.Metadata.Labels == nil || (*replaced.JSON200.Metadata.Labels)["team"] != "typed" {
		t.Fatalf("replace App: want image nginx:1.28 with its labels kept, got %+v", replaced.JSON200)
	}

	patched, err := dev.PatchAppWithApplicationMergePatchPlusJSONBodyWithResponse(ctx, ns, "typed-a",
		client.PatchAppApplicationMergePatchPlusJSONRequestBody{"spec": map[string]any{"replicas": 3}})
	status(t, "patch App", patched, patched.Body, err, http.StatusOK)
	if r := patched.JSON200.Spec.Replicas; r == nil || *r != 3 {
		t.Fatalf("patch App: want spec.replicas 3, got %v", r)
	}

	del, err := dev.DeleteAppWithResponse(ctx, ns, "typed-a")
	status(t, "delete App", del, del.Body, err, http.StatusNoContent)
	testutil.Eventually(t, 30*time.Second, "the deleted App to answer 404", func() error {
		r, err := dev.GetAppWithResponse(ctx, ns, "typed-a")
		if err != nil {
			return err
		}
		if r.StatusCode() != http.StatusNotFound || r.JSON404 == nil || r.JSON404.Error.Code != "NotFound" {
			return fmt.Errorf("got %d: %s", r.StatusCode(), r.Body)
		}
		return nil
	})

	// Another kind, at the version the portal serves: DatabaseCluster v1beta1's schema.
	db, err := dev.CreateDatabaseClusterWithResponse(ctx, ns, client.DatabaseClusterInput{
		Metadata: client.ObjectMeta{Name: "typed-db"},
		Spec:     client.DatabaseClusterSpec{Engine: client.Postgresql, ReplicaCount: ptr(int32(1))},
	})
	status(t, "create DatabaseCluster", db, db.Body, err, http.StatusCreated)
	if db.JSON201.ApiVersion != client.DatabaseClusterApiVersionMooringDevv1beta1 || db.JSON201.Spec.Engine != client.Postgresql {
		t.Fatalf("create DatabaseCluster: want a v1beta1 postgresql cluster, got %s %s", db.JSON201.ApiVersion, db.JSON201.Spec.Engine)
	}

	// Errors decode as the document's Error: the API server's field errors, by field.
	bad, err := dev.CreateAppWithResponse(ctx, ns, client.AppInput{Metadata: client.ObjectMeta{Name: "typed-bad"}, Spec: client.AppSpec{Image: ""}})
	status(t, "create an App with no image", bad, bad.Body, err, http.StatusUnprocessableEntity)
	if bad.JSON422 == nil || bad.JSON422.Error.Code != "Invalid" || len(bad.JSON422.Error.Fields) == 0 {
		t.Fatalf("create an App with no image: want Invalid with field errors, got %s", bad.Body)
	}
}

func ptr[T any](v T) *T { return &v }
