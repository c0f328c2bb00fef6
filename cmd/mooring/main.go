// Command mooring is the Mooring operator: it reconciles Apps, CacheInstances,
// DatabaseClusters and Backups on the cluster it is pointed at, and serves their
// admission and conversion webhooks.
package main

import (
	"context"
	"errors"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/mooringhq/mooring/internal/controller/database"
	"github.com/mooringhq/mooring/internal/instance"
	"github.com/mooringhq/mooring/internal/manager"
	mooringmetrics "github.com/mooringhq/mooring/internal/metrics"
	"github.com/mooringhq/mooring/internal/metricsauth"
	"github.com/mooringhq/mooring/internal/tracing"
	"github.com/mooringhq/mooring/internal/version"
)

func main() {
	// The database pods run this binary too, as their instance manager (internal/instance).
	if len(os.Args) > 1 && os.Args[1] == "instance" {
		os.Exit(instance.Main(os.Args[2:]))
	}
	if len(os.Args) == 2 && os.Args[1] == "version" {
		version.Print(os.Stdout, "mooring")
		return
	}
	var (
		metricsAddr, probeAddr, leaderNS string
		secureMetrics, leaderElect       bool
		concurrency, webhookPort         int
		shutdownTimeout                  time.Duration
		webhookHost, webhookCertDir      string
		webhookOpts                      manager.WebhookOptions
	)
	flag.StringVar(&metricsAddr, "metrics-bind-address", ":8080", "Address the Prometheus metrics endpoint binds to; \"0\" disables it.")
	flag.BoolVar(&secureMetrics, "metrics-secure", false, "Serve metrics over HTTPS, allowing only callers authorised by the API server (TokenReview and SubjectAccessReview).")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "Address the /healthz and /readyz probes bind to.")
	flag.BoolVar(&leaderElect, "leader-elect", false, "Elect a leader (lease \"mooring.dev\") so only one replica reconciles at a time.")
	flag.StringVar(&leaderNS, "leader-election-namespace", "", "Namespace of the leader election lease; required outside a cluster when --leader-elect is set.")
	flag.IntVar(&concurrency, "max-concurrent-reconciles", 16, "Objects of each kind reconciled in parallel; a reconcile mostly waits for the API server, so more than the CPUs (docs/performance.md).")
	flag.DurationVar(&shutdownTimeout, "graceful-shutdown-timeout", 30*time.Second, "How long in-flight reconciles may take to finish on SIGTERM.")
	flag.IntVar(&webhookPort, "webhook-port", 9443, "Port the webhook server (admission and conversion) listens on.")
	flag.StringVar(&webhookHost, "webhook-host", "", "Address the webhook server binds to; all interfaces when empty.")
	flag.StringVar(&webhookCertDir, "webhook-cert-dir", filepath.Join(os.TempDir(), "k8s-webhook-server", "serving-certs"), "Directory with the webhook server's tls.crt and tls.key.")
	flag.StringVar(&webhookOpts.CertManagement, "webhook-cert-management", manager.CertsSelf, "\"self\": Mooring makes, rotates and injects its own CA and serving certificate; \"external\": cert-manager (or another tool) provides them in --webhook-cert-dir.")
	flag.StringVar(&webhookOpts.Cert.DNSName, "webhook-dns-name", "mooring-webhook-service.mooring-system.svc", "DNS name in the serving certificate: the webhook Service's name, or localhost when the operator runs beside the API server.")
	flag.StringVar(&webhookOpts.Cert.Secret.Namespace, "webhook-secret-namespace", envOr("POD_NAMESPACE", "mooring-system"), "Namespace of the Secret that keeps the webhook CA and certificate.")
	flag.StringVar(&webhookOpts.Cert.Secret.Name, "webhook-secret-name", "mooring-webhook-server-cert", "Name of the Secret that keeps the webhook CA and certificate.")
	flag.BoolVar(&webhookOpts.Cert.WriteFiles, "webhook-cert-write", false, "Write the certificate from its Secret into --webhook-cert-dir (for running outside a cluster, where no volume mounts the Secret).")
	var traceRatio float64
	flag.Float64Var(&traceRatio, "trace-sampling-ratio", 1, "Share (0-1) of new traces recorded when OTEL_EXPORTER_OTLP_ENDPOINT turns tracing on; spans with a sampled parent are always recorded.")
	perf := bindPerformanceFlags(flag.CommandLine)
	imgs := bindImageFlags(flag.CommandLine)
	managerImage := bindInstanceManagerFlag(flag.CommandLine)
	printVersion := flag.Bool("version", false, "Print the version and exit.")
	zapOpts := zap.Options{}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse() // --kubeconfig is registered by controller-runtime's config package.
	if *printVersion {
		version.Print(os.Stdout, "mooring")
		return
	}

	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	klog.SetLogger(ctrl.Log)
	log := ctrl.Log.WithName("setup")
	build := version.Get()
	log.Info("Mooring operator", "version", build.Version, "revision", build.Revision, "goVersion", build.GoVersion)

	ctx := ctrl.SetupSignalHandler()
	shutdownTracing, err := tracing.Setup(ctx, tracing.Options{SamplingRatio: traceRatio, Version: build.Version})
	if err != nil {
		log.Error(err, "Unable to set up tracing")
		os.Exit(1)
	}
	metricsOpts := metricsserver.Options{BindAddress: metricsAddr, SecureServing: secureMetrics}
	if secureMetrics {
		metricsOpts.FilterProvider = metricsauth.Filter
	}
	perf.apply(log)
	if err := imgs.apply(); err != nil {
		log.Error(err, "Invalid image flag")
		os.Exit(1)
	}
	if err := database.SetInstanceManagerImage(*managerImage); err != nil {
		log.Error(err, "Invalid --instance-manager-image")
		os.Exit(1)
	}
	opts := ctrl.Options{
		PprofBindAddress:        perf.pprofAddr,
		Metrics:                 metricsOpts,
		HealthProbeBindAddress:  probeAddr,
		GracefulShutdownTimeout: &shutdownTimeout,
		WebhookServer: webhook.NewServer(webhook.Options{
			Host: webhookHost, Port: webhookPort, CertDir: webhookCertDir,
		}),
	}
	manager.SetLeaderElection(&opts, leaderElect, leaderNS)
	mgr, err := manager.New(perf.restConfig(ctrl.GetConfigOrDie()), opts)
	if err != nil {
		log.Error(err, "Unable to create manager")
		os.Exit(1)
	}
	if err := manager.Setup(mgr, manager.Options{
		MaxConcurrentReconciles: concurrency,
		Metrics:                 mooringmetrics.Options{WebhookCertDir: webhookCertDir},
	}); err != nil {
		log.Error(err, "Unable to set up controllers")
		os.Exit(1)
	}
	webhookOpts.Cert.CertDir = webhookCertDir
	webhooksReady, err := manager.SetupWebhooks(mgr, webhookOpts)
	if err != nil {
		log.Error(err, "Unable to set up webhooks")
		os.Exit(1)
	}
	if err := mgr.AddReadyzCheck("webhooks", webhooksReady); err != nil {
		log.Error(err, "Unable to add webhook ready check")
		os.Exit(1)
	}
	apiServerReady, err := manager.APIServerReachable(mgr.GetConfig())
	if err == nil {
		err = mgr.AddReadyzCheck("apiserver", apiServerReady)
	}
	if err != nil {
		log.Error(err, "Unable to add API server ready check")
		os.Exit(1)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		log.Error(err, "Unable to add health check")
		os.Exit(1)
	}
	// Ready once the caches are synced: before that, a reconcile would see nothing.
	if err := mgr.AddReadyzCheck("readyz", func(req *http.Request) error {
		if !mgr.GetCache().WaitForCacheSync(req.Context()) {
			return errors.New("caches not synced")
		}
		return nil
	}); err != nil {
		log.Error(err, "Unable to add ready check")
		os.Exit(1)
	}

	log.Info("Starting Mooring", "concurrency", concurrency, "leaderElection", leaderElect, "tracing", tracing.Enabled())
	err = mgr.Start(ctx)
	// Flush the spans of the last reconciles; the signal context is done by now.
	flushCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	if shutdownErr := shutdownTracing(flushCtx); shutdownErr != nil {
		log.Error(shutdownErr, "Unable to flush traces")
	}
	cancel()
	if err != nil {
		log.Error(err, "Manager stopped with an error")
		os.Exit(1)
	}
}

func envOr(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}
