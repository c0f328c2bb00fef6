package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	portalv1alpha1 "github.com/mooringhq/mooring/api/portal/v1alpha1"
	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/internal/devenv"
	"github.com/mooringhq/mooring/internal/portal/cluster"
	"github.com/mooringhq/mooring/internal/portal/models"
	"github.com/mooringhq/mooring/internal/portal/server"
	"github.com/mooringhq/mooring/internal/portal/services"
	"github.com/mooringhq/mooring/internal/portal/telemetry"
	"github.com/mooringhq/mooring/internal/testutil"
)

const adminPassword = "portalbench-admin-password"

// user is one developer: a portal account granted one namespace.
type user struct {
	id, name, namespace, token string
}

// fixture is everything the run needs: the API server, the portal and the users, with
// a target for each way in.
type fixture struct {
	env    *envtest.Environment
	srv    *http.Server
	server *server.Server
	admin  client.Client
	users  []*user
	portal target
	// pc is the portal target as what it is, for the revocation measurement.
	pc     *portalClient
	direct target
	tmp    string
}

func (f *fixture) close() {
	if f.srv != nil {
		_ = f.srv.Close()
	}
	if f.server != nil {
		f.server.Close()
	}
	if f.env != nil {
		if err := f.env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "portalbench: stop envtest:", err)
		}
	}
	if f.tmp != "" {
		_ = os.RemoveAll(f.tmp)
	}
}

// setUp starts envtest with Mooring's CRDs, installs the portal's RBAC, serves the
// portal on a free port of 127.0.0.1 and makes the users and their objects. No Mooring
// manager runs: the objects get the status it would write (see create), so the reads
// return what they return in a cluster while the measurement shares the two cores with
// no reconciles, and envtest's small Service IP range (a Service per object) does not
// cap the number of objects.
func setUp(ctx context.Context, c config) (*fixture, error) {
	// The portal logs only what goes wrong: a line per request would measure the log.
	slog.SetDefault(telemetry.NewLogger(os.Stderr, slog.LevelWarn))
	fmt.Fprintln(os.Stderr, "Starting envtest with Mooring's CRDs")
	f := &fixture{env: &envtest.Environment{
		BinaryAssetsDirectory: testutil.AssetsDir(),
		CRDDirectoryPaths:     []string{filepath.Join(testutil.RepoRoot(), "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}}
	if missing := testutil.MissingAssets(); len(missing) > 0 {
		return nil, fmt.Errorf("%v missing in %s: run `make tools` first (or set KUBEBUILDER_ASSETS)", missing, testutil.AssetsDir())
	}
	cfg, err := f.env.Start()
	if err != nil {
		return f, fmt.Errorf("start envtest: %w", err)
	}
	admin, err := client.New(cfg, client.Options{})
	if err != nil {
		return f, err
	}
	f.admin = admin
	if f.tmp, err = os.MkdirTemp("", "portalbench-"); err != nil {
		return f, err
	}
	_, portalRest, err := devenv.InstallPortal(ctx, cfg, testutil.RepoRoot(), filepath.Join(testutil.AssetsDir(), "kubectl"), f.tmp)
	if err != nil {
		return f, fmt.Errorf("install the portal's RBAC: %w", err)
	}
	// As cmd/mooring-portal gets it from controller-runtime's config.GetConfig: no
	// client-side rate limit, the API server's priority and fairness decides.
	portalRest.QPS = -1
	base, err := startPortal(ctx, f, portalRest)
	if err != nil {
		return f, err
	}
	pc := &portalClient{base: base, http: &http.Client{Timeout: time.Minute,
		Transport: &http.Transport{MaxIdleConnsPerHost: 256, MaxIdleConns: 256}}}
	adminToken, err := pc.login("admin", adminPassword)
	if err != nil {
		return f, err
	}
	imp := cluster.NewImpersonator(portalRest, cluster.DefaultUsersNamespace)
	direct := &directClient{host: strings.TrimSuffix(portalRest.Host, "/"), clients: map[int]*http.Client{}}
	fmt.Fprintf(os.Stderr, "Creating %d developers with %d Apps and %d CacheInstances each\n", c.users, c.apps, c.caches)
	for i := 0; i < c.users; i++ {
		u, err := makeUser(ctx, admin, pc, adminToken, i, c)
		if err != nil {
			return f, err
		}
		f.users = append(f.users, u)
		hc, err := rest.HTTPClientFor(imp.Config(imp.IdentityOf(u.id, portalv1alpha1.RoleDeveloper)))
		if err != nil {
			return f, err
		}
		direct.clients[i] = hc
	}
	pc.users, direct.users = f.users, f.users
	f.portal, f.direct, f.pc = pc, direct, pc
	return f, nil
}

// startPortal assembles the portal as cmd/mooring-portal does and serves its handler.
// Rate limits are raised so that they do not refuse the benchmark's 10 requests/s per
// user (the default is 300 a minute); they still run, so their cost is measured.
func startPortal(ctx context.Context, f *fixture, rc *rest.Config) (string, error) {
	s, err := server.New(ctx, server.Config{
		Rest: rc, Namespace: devenv.PortalNamespace, UsersNamespace: cluster.DefaultUsersNamespace,
		SigningKeySecret: "mooring-portal-signing-keys", KeyRotation: 7 * 24 * time.Hour,
		Issuer: "mooring-portal", Audience: "mooring-portal",
		AccessTTL: time.Hour, RefreshTTL: 24 * time.Hour, SessionMaxLifetime: 7 * 24 * time.Hour,
		RefreshReuseInterval: 3 * time.Second,
		IPLimit:              1000, UserLimit: 1_000_000, RateWindow: time.Minute,
		Lockout:       services.LockoutPolicy{Threshold: 5, Base: 30 * time.Second, Max: 15 * time.Minute},
		Roles:         services.DefaultRoleNames,
		AdminUsername: "admin", AdminEmail: "admin@mooring.local", AdminPassword: adminPassword,
	})
	if err != nil {
		return "", fmt.Errorf("start the portal: %w", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	f.server = s
	f.srv = &http.Server{Handler: s.Handler, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := f.srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintln(os.Stderr, "portalbench: portal:", err)
		}
	}()
	return "http://" + l.Addr().String(), nil
}

// makeUser registers user i, grants it the developer role in a new namespace and
// creates its objects there (as the cluster admin: the set-up is not measured).
func makeUser(ctx context.Context, admin client.Client, pc *portalClient, adminToken string, i int, c config) (*user, error) {
	ns := &unstructured.Unstructured{}
	ns.SetAPIVersion("v1")
	ns.SetKind("Namespace")
	ns.SetName(fmt.Sprintf("bench-%02d", i))
	if err := admin.Create(ctx, ns); err != nil {
		return nil, fmt.Errorf("create namespace %s: %w", ns.GetName(), err)
	}
	name, pw := fmt.Sprintf("dev%02d", i), "correct horse battery staple"
	var u models.User
	if err := pc.call("POST", "/api/v1/users", "", models.RegisterRequest{Username: name, Email: name + "@example.com", Password: pw}, http.StatusCreated, &u); err != nil {
		return nil, err
	}
	role, nss := string(portalv1alpha1.RoleDeveloper), []string{ns.GetName()}
	if err := pc.call("PATCH", "/api/v1/users/"+u.ID, adminToken, models.UpdateUserRequest{Role: &role, Namespaces: &nss}, http.StatusOK, nil); err != nil {
		return nil, err
	}
	tok, err := pc.login(name, pw)
	if err != nil {
		return nil, err
	}
	for j := 0; j < c.apps; j++ {
		if err := create(ctx, admin, object("App", ns.GetName(), appName(j), map[string]any{
			"image": "nginx:1.27", "replicas": int64(1), "port": int64(8080), "config": fmt.Sprintf("greeting=hello-%d\n", j),
		})); err != nil {
			return nil, err
		}
	}
	for j := 0; j < c.caches; j++ {
		if err := create(ctx, admin, object("CacheInstance", ns.GetName(), cacheName(j), map[string]any{
			"replicas": int64(1), "memoryMB": int64(64),
		})); err != nil {
			return nil, err
		}
	}
	return &user{id: u.ID, name: name, namespace: ns.GetName(), token: tok}, nil
}

// create creates o and gives it the status of a healthy object, as Mooring's manager
// writes it: the phase, the replicas, the generation seen and the Ready and Progressing
// conditions. Fields a kind's status does not have are pruned by the API server.
func create(ctx context.Context, c client.Client, o *unstructured.Unstructured) error {
	what := o.GetKind() + " " + o.GetNamespace() + "/" + o.GetName()
	if err := c.Create(ctx, o); err != nil {
		return fmt.Errorf("create %s: %w", what, err)
	}
	now := metav1.Now().UTC().Format(time.RFC3339)
	cond := func(typ, reason, msg string) map[string]any {
		return map[string]any{"type": typ, "status": "True", "reason": reason, "message": msg,
			"observedGeneration": o.GetGeneration(), "lastTransitionTime": now}
	}
	o.Object["status"] = map[string]any{
		"phase": "Running", "replicas": int64(1), "readyReplicas": int64(1), "observedGeneration": o.GetGeneration(),
		"conditions": []any{
			cond("Ready", "Available", "1 of 1 replicas are ready."),
			cond("Progressing", "RolloutComplete", "The latest rollout is complete."),
		},
	}
	if err := c.Status().Update(ctx, o); err != nil {
		return fmt.Errorf("write the status of %s: %w", what, err)
	}
	return nil
}

func object(kind, ns, name string, spec map[string]any) *unstructured.Unstructured {
	o := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	o.SetAPIVersion(mooringv1.GroupVersion.String())
	o.SetKind(kind)
	o.SetNamespace(ns)
	o.SetName(name)
	return o
}

// portalClient sends requests to the portal's API with the users' access tokens.
type portalClient struct {
	base  string
	http  *http.Client
	users []*user
}

func (p *portalClient) httpRequest(ctx context.Context, r request) (*http.Request, *http.Client, error) {
	path := "/api/v1/namespaces/" + r.namespace + "/" + r.kind
	if r.name != "" {
		path += "/" + r.name
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.base+path, nil)
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+p.users[r.user].token)
	req.Header.Set("Accept", "application/json")
	return req, p.http, nil
}

// call sends a JSON request to the portal and decodes the answer into out, failing
// unless the status is want.
func (p *portalClient) call(method, path, token string, body any, want int, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequest(method, p.base+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := p.http.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != want {
		return fmt.Errorf("%s %s: want %d, got %d: %s", method, path, want, resp.StatusCode, data)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(data, out)
}

func (p *portalClient) login(username, password string) (string, error) {
	var tok models.TokenResponse
	err := p.call("POST", "/api/v1/login", "", models.LoginRequest{Username: username, Password: password}, http.StatusOK, &tok)
	return tok.AccessToken, err
}

// directClient sends the same reads to the API server as the portal would: with the
// portal's credentials, impersonating the user's identity and role group.
type directClient struct {
	host    string
	clients map[int]*http.Client
	users   []*user
}

func (d *directClient) httpRequest(ctx context.Context, r request) (*http.Request, *http.Client, error) {
	path := "/apis/" + mooringv1.GroupVersion.String() + "/namespaces/" + r.namespace + "/" + r.kind
	if r.name != "" {
		path += "/" + r.name
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.host+path, nil)
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Accept", "application/json")
	return req, d.clients[r.user], nil
}
