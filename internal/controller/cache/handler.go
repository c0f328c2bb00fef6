package cache

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/internal/controller/rollout"
	"github.com/mooringhq/mooring/internal/engine"
)

// +kubebuilder:rbac:groups=mooring.dev,resources=cacheinstances,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=mooring.dev,resources=cacheinstances/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=mooring.dev,resources=cacheinstances/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=services;configmaps,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Handler plugs the CacheInstance kind into the engine.
type Handler struct{}

// Owned lists the kinds of a CacheInstance's children: watched, cached by label, and
// pruned (the PodDisruptionBudget goes when the replicas drop to one).
var Owned = []client.Object{&appsv1.Deployment{}, &corev1.Service{}, &policyv1.PodDisruptionBudget{}, &corev1.ConfigMap{}}

// NewObject returns an empty CacheInstance.
func (Handler) NewObject() *mooringv1.CacheInstance { return &mooringv1.CacheInstance{} }

// Validate has nothing to check: the CRD schema rejects invalid CacheInstances at
// admission.
func (Handler) Validate(*mooringv1.CacheInstance) error { return nil }

// Sync applies the CacheInstance's children and derives its status from the Deployment.
func (Handler) Sync(ctx context.Context, s *engine.Scope[*mooringv1.CacheInstance]) (ctrl.Result, error) {
	children := Children(s.Object)
	if err := s.ApplyAll(ctx, children); err != nil {
		return ctrl.Result{}, err
	}
	// Pods say why a rollout does not complete (an image that cannot be pulled, a crash).
	pods, err := rollout.ListPods(ctx, s.Client, s.Object.Namespace, engine.SelectorLabels(Component, s.Object.Name))
	if err != nil {
		return ctrl.Result{}, err
	}
	deriveStatus(s.Object, engine.First[*appsv1.Deployment](children), pods)
	return ctrl.Result{}, nil
}

// SetupWithManager registers the CacheInstance controller.
func SetupWithManager(mgr ctrl.Manager, concurrency int) error {
	return engine.SetupWithManager[*mooringv1.CacheInstance](mgr, Handler{}, engine.Options{
		Component: Component, Owns: Owned, MaxConcurrentReconciles: concurrency,
	}, rollout.WatchPods(Component))
}
