// Package manager assembles Mooring: the scheme, the cache (only Mooring's own children,
// without managedFields) and every kind's controller. cmd/mooring and the integration
// tests build the manager through it, so tests run the wiring that ships.
package manager

import (
	"context"
	"fmt"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/internal/apimetrics"
	"github.com/mooringhq/mooring/internal/controller/app"
	backupcontroller "github.com/mooringhq/mooring/internal/controller/backup"
	cachecontroller "github.com/mooringhq/mooring/internal/controller/cache"
	"github.com/mooringhq/mooring/internal/controller/database"
	"github.com/mooringhq/mooring/internal/controller/rollout"
	"github.com/mooringhq/mooring/internal/crdmigrator"
	"github.com/mooringhq/mooring/internal/engine"
	mooringmetrics "github.com/mooringhq/mooring/internal/metrics"
	"github.com/mooringhq/mooring/internal/tracing"
	"github.com/mooringhq/mooring/internal/webhook"
)

// Scheme knows the built-in kinds and Mooring's.
var Scheme = runtime.NewScheme()

func init() {
	utilruntime.Must(clientgoscheme.AddToScheme(Scheme))
	utilruntime.Must(mooringv1.AddToScheme(Scheme))
	// Gateway API types, for the HTTPRoutes of exposed Apps; registering them needs no CRD.
	utilruntime.Must(gatewayv1.Install(Scheme))
}

// Options are the knobs of Mooring's controllers.
type Options struct {
	// MaxConcurrentReconciles per kind.
	MaxConcurrentReconciles int
	// Metrics configures Mooring's own collectors (resource metrics, build info, webhook
	// certificate expiry); a nil Registerer means controller-runtime's metrics.Registry,
	// which the manager's metrics endpoint serves.
	Metrics mooringmetrics.Options
}

// ownedTypes are the child kinds of every Mooring kind, each once (several kinds own
// Deployments and Services); the cache holds only the ones labelled managed-by=mooring.
func ownedTypes() []client.Object {
	var out []client.Object
	seen := map[reflect.Type]bool{}
	for _, owned := range [][]client.Object{app.Owned, cachecontroller.Owned, database.Owned, database.Cached,
		backupcontroller.Owned, backupcontroller.Cached} {
		for _, o := range owned {
			if t := reflect.TypeOf(o); !seen[t] {
				seen[t] = true
				out = append(out, o)
			}
		}
	}
	return out
}

// CacheOptions caches only Mooring's children (by label), each trimmed to what Mooring
// reads of it (transform.go), and drops managedFields and kubectl's last-applied
// annotation of everything else, which Mooring never reads and which are often the
// larger part of an object.
func CacheOptions() cache.Options {
	managed := labels.SelectorFromSet(labels.Set{mooringv1.ManagedByLabel: mooringv1.ManagedBy})
	transforms := childTransforms()
	byObject := map[client.Object]cache.ByObject{}
	for _, o := range ownedTypes() {
		byObject[o] = cache.ByObject{Label: managed, Transform: transformOf(transforms, o)}
	}
	// Pods only to say why a rollout does not complete: Mooring's, trimmed to their status.
	byObject[&corev1.Pod{}] = cache.ByObject{Label: managed, Transform: rollout.TrimPod}
	return cache.Options{
		ByObject:         byObject,
		DefaultTransform: engine.StripUnread,
	}
}

// transformOf is the transform of o's type; a child kind without one of its own keeps
// all it has, and the engine compares it whole, as before there were transforms.
func transformOf(transforms map[client.Object]toolscache.TransformFunc, o client.Object) toolscache.TransformFunc {
	for t, f := range transforms {
		if reflect.TypeOf(t) == reflect.TypeOf(o) {
			return f
		}
	}
	return engine.StripUnread
}

// New creates a manager from opts, with Mooring's scheme, cache settings and API request
// metrics; the caller sets the serving, probe and leader election options.
func New(cfg *rest.Config, opts ctrl.Options) (ctrl.Manager, error) {
	cfg = rest.CopyConfig(cfg)
	apimetrics.Instrument(cfg)
	// Traced only when tracing is set up (internal/tracing); a no-op otherwise.
	tracing.Instrument(cfg, nil)
	if opts.WebhookServer != nil {
		// Waits for its certificate in Start rather than being added late (see
		// webhook.AwaitCertificate): conversion must be served before the caches sync.
		opts.WebhookServer = tracing.WebhookServer(webhook.AwaitCertificate(opts.WebhookServer), nil)
	}
	opts.Scheme = Scheme
	opts.Cache = CacheOptions()
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		return nil, err
	}
	// Children and pods by owner, so a reconcile lists its own and not its namespace's.
	if err := engine.IndexChildren(context.Background(), mgr.GetCache(), append(ownedTypes(), &corev1.Pod{})...); err != nil {
		return nil, err
	}
	return mgr, nil
}

// Setup registers every Mooring controller with mgr.
func Setup(mgr ctrl.Manager, o Options) error {
	if err := app.SetupWithManager(context.Background(), mgr, o.MaxConcurrentReconciles); err != nil {
		return fmt.Errorf("set up App controller: %w", err)
	}
	if err := cachecontroller.SetupWithManager(mgr, o.MaxConcurrentReconciles); err != nil {
		return fmt.Errorf("set up CacheInstance controller: %w", err)
	}
	if err := database.SetupWithManager(context.Background(), mgr, o.MaxConcurrentReconciles); err != nil {
		return fmt.Errorf("set up DatabaseCluster controller: %w", err)
	}
	if err := backupcontroller.SetupWithManager(context.Background(), mgr, o.MaxConcurrentReconciles); err != nil {
		return fmt.Errorf("set up Backup controller: %w", err)
	}
	mo := o.Metrics
	if mo.Registerer == nil {
		mo.Registerer = ctrlmetrics.Registry
	}
	if err := mooringmetrics.Add(mgr, mo); err != nil {
		return fmt.Errorf("set up metrics: %w", err)
	}
	// Objects stored as v1alpha1 move to the v1beta1 storage version, once, on the leader.
	migrator, err := crdmigrator.New(mgr.GetConfig(), "databaseclusters.mooring.dev")
	if err != nil {
		return err
	}
	if err := mgr.Add(migrator); err != nil {
		return fmt.Errorf("set up CRD migrator: %w", err)
	}
	return nil
}
