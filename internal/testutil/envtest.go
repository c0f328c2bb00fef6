package testutil

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"go.uber.org/zap/zapcore"

	"github.com/mooringhq/mooring/internal/manager"
	"github.com/mooringhq/mooring/internal/metrics"
)

// Env is a package's API server with Mooring's manager reconciling against it. It is
// started by the first test that needs it (Require, or Namespace, Kubectl, User, which
// call it) and stopped by Main after the last, so the package's pure tests run without
// one, and without bin/k8s.
type Env struct {
	// Config reaches the API server as an admin; Client is built from it and does not
	// go through the manager's cache or request counting. Both are nil until Require
	// has returned.
	Config *rest.Config
	Client client.Client

	once     sync.Once
	startErr error
	onStart  []func(*Env) error
	onStop   []func()
	// usersMu serialises envtest's AddUser and the admin kubeconfig of Kubectl.
	usersMu sync.Mutex

	env        *envtest.Environment
	kubeconfig string
	cancel     context.CancelFunc
	done       chan error
}

// RepoRoot is the checkout's top directory, found from this file's location.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// AssetsDir is where kube-apiserver and etcd are: $KUBEBUILDER_ASSETS, else bin/k8s.
func AssetsDir() string {
	if d := os.Getenv("KUBEBUILDER_ASSETS"); d != "" {
		return d
	}
	return filepath.Join(RepoRoot(), "bin", "k8s")
}

// OnStart registers f to run once the API server and the manager have started, before
// the first test that needs them goes on: a package's own set-up on the API server.
// Register from TestMain (in Main's set), before any test runs.
func (e *Env) OnStart(f func(*Env) error) { e.onStart = append(e.onStart, f) }

// OnStop registers f to run when the Env stops, before its manager and API server do,
// the last registered first: what an OnStart function started (a second manager).
func (e *Env) OnStop(f func()) { e.onStop = append(e.onStop, f) }

// Require starts the package's API server and manager for the first test that calls it
// and returns once they are ready. It skips t when the integration tier is not selected
// or its binaries are missing (see RequireTier), and fails it when they cannot start:
// every later test then fails with the same error rather than retrying.
func (e *Env) Require(t testing.TB) {
	t.Helper()
	RequireTier(t, Integration)
	e.once.Do(func() { e.startErr = e.start() })
	if e.startErr != nil {
		t.Fatalf("start the package's API server: %v", e.startErr)
	}
}

// Start runs an API server with the CRDs of config/crd/bases and a Mooring manager
// against it at once, for a caller that needs them before any test runs; Stop it when
// done. A package's tests use Main and Require instead, so that its unit tests run
// without one.
func Start() (*Env, error) {
	e := &Env{}
	e.once.Do(func() { e.startErr = e.start() })
	return e, e.startErr
}

// start runs the API server and the manager, then the OnStart functions.
func (e *Env) start() error {
	logf.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.UseDevMode(true), zap.Level(zapLevel())))
	if missing := MissingAssets(); len(missing) > 0 {
		return fmt.Errorf("%v missing in %s: run `make tools` first (or set KUBEBUILDER_ASSETS)", missing, AssetsDir())
	}
	e.env = &envtest.Environment{
		BinaryAssetsDirectory: AssetsDir(),
		CRDDirectoryPaths:     []string{filepath.Join(RepoRoot(), "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		// envtest points the generated webhook configurations and the conversion webhook
		// at the manager below, with a CA of its own.
		CRDInstallOptions:     envtest.CRDInstallOptions{Scheme: manager.Scheme},
		WebhookInstallOptions: envtest.WebhookInstallOptions{Paths: []string{filepath.Join(RepoRoot(), "config", "webhook")}},
	}
	cfg, err := e.env.Start()
	if err != nil {
		return fmt.Errorf("start envtest: %w", err)
	}
	c, err := client.New(cfg, client.Options{Scheme: manager.Scheme})
	if err != nil {
		return err
	}
	wh := e.env.WebhookInstallOptions
	mgr, err := manager.New(cfg, ctrl.Options{
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		WebhookServer: webhook.NewServer(webhook.Options{
			Host: wh.LocalServingHost, Port: wh.LocalServingPort, CertDir: wh.LocalServingCertDir,
		}),
	})
	if err != nil {
		return err
	}
	if _, err := manager.SetupWebhooks(mgr, manager.WebhookOptions{CertManagement: manager.CertsExternal}); err != nil {
		return err
	}
	if err := manager.Setup(mgr, manager.Options{MaxConcurrentReconciles: 4,
		Metrics: metrics.Options{WebhookCertDir: wh.LocalServingCertDir}}); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel, e.done = cancel, make(chan error, 1)
	go func() { e.done <- mgr.Start(ctx) }()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		return fmt.Errorf("manager cache did not sync")
	}
	if err := Poll(DefaultTimeout, func() error { return mgr.GetWebhookServer().StartedChecker()(nil) }); err != nil {
		return fmt.Errorf("webhook server did not start: %w", err)
	}
	// Published last: a test sees Config and Client only once the manager serves.
	e.Config, e.Client = cfg, c
	for _, f := range e.onStart {
		if err := f(e); err != nil {
			return err
		}
	}
	return nil
}

// Stop stops the manager, then the API server and etcd, if they were started.
func (e *Env) Stop() error {
	for i := len(e.onStop) - 1; i >= 0; i-- {
		e.onStop[i]()
	}
	e.onStop = nil
	if e.cancel == nil {
		if e.env != nil {
			return e.env.Stop() // started halfway: the manager never ran
		}
		return nil
	}
	e.cancel()
	err := <-e.done
	if e.kubeconfig != "" {
		_ = os.Remove(e.kubeconfig)
	}
	if stopErr := e.env.Stop(); stopErr != nil {
		return stopErr
	}
	return err
}

// Namespace creates a namespace for one test, named after it.
func (e *Env) Namespace(t testing.TB) string {
	t.Helper()
	e.Require(t)
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(name) > 50 {
		name = name[:50]
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: strings.Trim(name, "-") + "-"}}
	if err := e.Client.Create(context.Background(), ns); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	return ns.Name
}

func zapLevel() zapcore.Level {
	if os.Getenv("MOORING_TEST_LOG") != "" {
		return zapcore.DebugLevel
	}
	return zapcore.ErrorLevel // envtest output stays readable
}

// Main is a package's TestMain: it hands a not yet started Env to set (which stores it
// in the package's own variable and may register OnStart functions), runs the tests,
// stops the Env if a test started it, and exits with the tests' code.
func Main(m *testing.M, set func(*Env)) {
	env := &Env{}
	set(env)
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stop envtest:", err)
	}
	os.Exit(code)
}

// APIServer is a package's bare API server and etcd (no CRDs, no manager), started by
// the first test that calls Require and stopped by Main after the last.
type APIServer struct {
	// Set runs once the API server has started, with its admin configuration: the
	// package's own set-up. An error fails every test that requires the API server.
	Set func(cfg *rest.Config) error

	once sync.Once
	err  error
	env  *envtest.Environment
}

// Require starts the API server for the first test that calls it. It skips or fails t
// as Env.Require does.
func (a *APIServer) Require(t testing.TB) {
	t.Helper()
	RequireTier(t, Integration)
	a.once.Do(func() {
		a.env = &envtest.Environment{BinaryAssetsDirectory: AssetsDir()}
		cfg, err := a.env.Start()
		if err != nil {
			a.err = fmt.Errorf("start envtest: %w", err)
			return
		}
		if a.Set != nil {
			a.err = a.Set(cfg)
		}
	})
	if a.err != nil {
		t.Fatalf("start the package's API server: %v", a.err)
	}
}

// Main is a package's TestMain: it runs the tests, stops the API server if a test
// started it, and exits with the tests' code.
func (a *APIServer) Main(m *testing.M) {
	code := m.Run()
	if a.env != nil {
		if err := a.env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stop envtest:", err)
		}
	}
	os.Exit(code)
}
