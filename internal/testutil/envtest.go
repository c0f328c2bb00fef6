package testutil

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
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

// Env is a running API server with Mooring's manager reconciling against it.
type Env struct {
	// Config reaches the API server as an admin; Client is built from it and does not
	// go through the manager's cache or request counting.
	Config *rest.Config
	Client client.Client

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

// Start runs an API server with the CRDs of config/crd/bases and a Mooring manager
// against it. Call it from TestMain and Stop when the tests are done.
func Start() (*Env, error) {
	logf.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.UseDevMode(true), zap.Level(zapLevel())))
	if _, err := os.Stat(filepath.Join(AssetsDir(), "kube-apiserver")); err != nil {
		return nil, fmt.Errorf("no kube-apiserver in %s: run `make tools` first (or set KUBEBUILDER_ASSETS)", AssetsDir())
	}
	e := &Env{env: &envtest.Environment{
		BinaryAssetsDirectory: AssetsDir(),
		CRDDirectoryPaths:     []string{filepath.Join(RepoRoot(), "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		// envtest points the generated webhook configurations and the conversion webhook
		// at the manager below, with a CA of its own.
		CRDInstallOptions:     envtest.CRDInstallOptions{Scheme: manager.Scheme},
		WebhookInstallOptions: envtest.WebhookInstallOptions{Paths: []string{filepath.Join(RepoRoot(), "config", "webhook")}},
	}}
	cfg, err := e.env.Start()
	if err != nil {
		return nil, fmt.Errorf("start envtest: %w", err)
	}
	e.Config = cfg
	if e.Client, err = client.New(cfg, client.Options{Scheme: manager.Scheme}); err != nil {
		return nil, err
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
		return nil, err
	}
	if _, err := manager.SetupWebhooks(mgr, manager.WebhookOptions{CertManagement: manager.CertsExternal}); err != nil {
		return nil, err
	}
	if err := manager.Setup(mgr, manager.Options{MaxConcurrentReconciles: 4,
		Metrics: metrics.Options{WebhookCertDir: wh.LocalServingCertDir}}); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel, e.done = cancel, make(chan error, 1)
	go func() { e.done <- mgr.Start(ctx) }()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("manager cache did not sync")
	}
	if err := Poll(DefaultTimeout, func() error { return mgr.GetWebhookServer().StartedChecker()(nil) }); err != nil {
		return nil, fmt.Errorf("webhook server did not start: %w", err)
	}
	return e, nil
}

// Stop stops the manager, then the API server and etcd.
func (e *Env) Stop() error {
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

// Main is a package's TestMain: it starts an Env, hands it to set (the package's own
// variable), runs the tests, stops the Env and exits with the tests' code.
func Main(m *testing.M, set func(*Env)) {
	env, err := Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	set(env)
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stop envtest:", err)
	}
	os.Exit(code)
}

// MainAPIServer is a package's TestMain when its tests need only an API server and etcd
// (no CRDs, no manager): it starts them, hands the admin configuration to set, runs the
// tests unless set fails, stops them and exits with the tests' code.
func MainAPIServer(m *testing.M, set func(cfg *rest.Config) error) {
	env := &envtest.Environment{BinaryAssetsDirectory: AssetsDir()}
	cfg, err := env.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "start envtest:", err)
		os.Exit(1)
	}
	code := 1
	if err := set(cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
	} else {
		code = m.Run()
	}
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stop envtest:", err)
	}
	os.Exit(code)
}
