package app

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/internal/controller/rollout"
	"github.com/mooringhq/mooring/internal/engine"
)

// +kubebuilder:rbac:groups=mooring.dev,resources=apps,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=mooring.dev,resources=apps/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=mooring.dev,resources=apps/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=services;configmaps,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Handler plugs the App kind into the engine.
type Handler struct{}

// Owned lists the kinds of an App's children: watched, cached by label, and pruned.
var Owned = []client.Object{&appsv1.Deployment{}, &corev1.Service{}, &corev1.ConfigMap{}}

// NewObject returns an empty App.
func (Handler) NewObject() *mooringv1.App { return &mooringv1.App{} }

// Validate has nothing to check: the CRD schema and its CEL rules reject invalid Apps at
// admission.
func (Handler) Validate(*mooringv1.App) error { return nil }

// Sync applies the App's children and derives its status from the Deployment.
func (Handler) Sync(ctx context.Context, s *engine.Scope[*mooringv1.App]) (ctrl.Result, error) {
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

// SetupWithManager registers the App controller.
func SetupWithManager(mgr ctrl.Manager, concurrency int) error {
	return engine.SetupWithManager[*mooringv1.App](mgr, Handler{}, engine.Options{
		Component: Component, Owns: Owned, MaxConcurrentReconciles: concurrency,
	}, rollout.WatchPods(Component))
}
