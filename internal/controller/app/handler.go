package app

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/api/v1beta1"
	"github.com/mooringhq/mooring/internal/controller/database"
	"github.com/mooringhq/mooring/internal/controller/rollout"
	"github.com/mooringhq/mooring/internal/engine"
)

// +kubebuilder:rbac:groups=mooring.dev,resources=apps,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=mooring.dev,resources=apps/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=mooring.dev,resources=apps/finalizers,verbs=update
// +kubebuilder:rbac:groups=mooring.dev,resources=databaseclusters;cacheinstances,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=services;configmaps,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups=autoscaling,resources=horizontalpodautoscalers,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingresses,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=httproutes,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// gatewayRecheck is how often an App that asks for an HTTPRoute looks again for the
// Gateway API while it is not installed: no watch can be opened on a kind that is not
// served, and installing CRDs is rare enough that a minute's delay is fine.
const gatewayRecheck = time.Minute

// configMapsWatch names the on-demand watch of ConfigMap metadata for spec.envFrom.
const configMapsWatch = "configmaps"

// Handler plugs the App kind into the engine.
type Handler struct {
	// References reads the metadata of every ConfigMap in the cluster (not only
	// Mooring's, which is all the manager's cache holds), for spec.envFrom.
	References client.Reader
}

// Owned lists the kinds of an App's children: watched, cached by label, and pruned.
var Owned = []client.Object{&appsv1.Deployment{}, &corev1.Service{}, &corev1.ConfigMap{},
	&policyv1.PodDisruptionBudget{}, &autoscalingv2.HorizontalPodAutoscaler{}, &networkingv1.Ingress{}}

// Optional lists the child kinds another project's CRDs provide: the Gateway API's HTTPRoute.
var Optional = []client.Object{&gatewayv1.HTTPRoute{}}

// NewObject returns an empty App.
func (Handler) NewObject() *mooringv1.App { return &mooringv1.App{} }

// Validate has nothing to check: the CRD schema, its CEL rules and the webhook reject
// invalid Apps at admission.
func (Handler) Validate(*mooringv1.App) error { return nil }

// Sync waits for what the App references, applies its children and derives its status.
func (h Handler) Sync(ctx context.Context, s *engine.Scope[*mooringv1.App]) (ctrl.Result, error) {
	app := s.Object
	envReady, envFrom, err := h.checkEnvFrom(ctx, s)
	if err != nil {
		return ctrl.Result{}, err
	}
	// The live Deployment says which bindings resolved before (see resolveBindings).
	d, err := liveChild(ctx, s.Client, app, &appsv1.Deployment{})
	if err != nil {
		return ctrl.Result{}, err
	}
	bindings, bindingsReady, err := h.resolveBindings(ctx, s, d)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !envReady || !bindingsReady {
		// Pods without their ConfigMaps and Secrets would never start: change nothing,
		// keep what runs, and come back through the watches when the references appear.
		s.KeepChildren()
		var hpa *autoscalingv2.HorizontalPodAutoscaler
		if app.Spec.Autoscaling != nil {
			if hpa, err = liveChild(ctx, s.Client, app, &autoscalingv2.HorizontalPodAutoscaler{}); err != nil {
				return ctrl.Result{}, err
			}
		}
		deriveWaitingStatus(app, d, hpa)
		return ctrl.Result{}, nil
	}

	r := Resolved{Bindings: bindings, EnvFrom: envFrom}
	wantsRoute := app.Spec.Expose != nil && app.Spec.Expose.Gateway != nil
	if wantsRoute {
		if r.GatewayAPI, err = s.Served(ctx, &gatewayv1.HTTPRoute{}); err != nil {
			return ctrl.Result{}, err
		}
	}
	children := Children(app, r)
	setBindingEnvShadowed(app, ShadowedBindingEnv(app, r))
	for _, child := range children {
		var opts []engine.ApplyOption
		if _, ok := child.(*appsv1.Deployment); ok {
			opts = append(opts, engine.HandOver(HandOverFieldManager, "spec", "replicas"))
		}
		if err := s.Apply(ctx, child, opts...); err != nil {
			return ctrl.Result{}, err
		}
	}
	// Pods say why a rollout does not complete (an image that cannot be pulled, a crash).
	pods, err := rollout.ListPods(ctx, s.Client, app.Namespace, engine.SelectorLabels(Component, app.Name))
	if err != nil {
		return ctrl.Result{}, err
	}
	deriveStatus(app, engine.First[*appsv1.Deployment](children), engine.First[*autoscalingv2.HorizontalPodAutoscaler](children), pods)
	setExposed(app, engine.First[*networkingv1.Ingress](children), engine.First[*gatewayv1.HTTPRoute](children), wantsRoute, r.GatewayAPI)
	if wantsRoute && !r.GatewayAPI {
		return engine.RequeueAfter(gatewayRecheck), nil
	}
	return ctrl.Result{}, nil
}

// setBindingEnvShadowed reports the binding variables spec.env hides (see
// mooringv1.ConditionBindingEnvShadowed).
func setBindingEnvShadowed(app *mooringv1.App, shadowed []string) {
	if len(shadowed) == 0 {
		meta.RemoveStatusCondition(app.StatusConditions(), mooringv1.ConditionBindingEnvShadowed)
		return
	}
	engine.SetCondition(app, mooringv1.ConditionBindingEnvShadowed, metav1.ConditionTrue, mooringv1.ReasonSpecEnvWins,
		"spec.env sets "+strings.Join(shadowed, ", ")+": the pods get spec.env's value, not the binding's. "+
			"Remove the entry from spec.env, or rename the binding, to use the binding's value.")
}

// liveChild reads the App's child of obj's kind (named like the App) into obj; nil when
// there is none.
func liveChild[C client.Object](ctx context.Context, c client.Client, app *mooringv1.App, obj C) (C, error) {
	var none C
	if err := c.Get(ctx, client.ObjectKeyFromObject(app), obj); err != nil {
		if apierrors.IsNotFound(err) {
			return none, nil
		}
		gvk, _ := c.GroupVersionKindFor(obj) // the Get found the kind: no error here
		return none, fmt.Errorf("get %s %s: %w", gvk.Kind, app.Name, err)
	}
	return obj, nil
}

// setExposed sets status.url and the Exposed condition (only while spec.expose is set).
// ing and route are the live Ingress and HTTPRoute, nil when not made.
func setExposed(app *mooringv1.App, ing *networkingv1.Ingress, route *gatewayv1.HTTPRoute, wantsRoute, routeServed bool) {
	app.Status.URL = ""
	switch {
	case app.Spec.Expose == nil:
		meta.RemoveStatusCondition(app.StatusConditions(), mooringv1.ConditionExposed)
	case wantsRoute && !routeServed:
		engine.SetCondition(app, mooringv1.ConditionExposed, metav1.ConditionFalse, mooringv1.ReasonGatewayAPINotInstalled,
			"spec.expose.gateway needs the Gateway API (HTTPRoute, gateway.networking.k8s.io/v1), which this cluster does not serve; install its CRDs and the App is exposed within a minute.")
	case wantsRoute:
		setRouteExposed(app, route)
	default:
		app.Status.URL = URL(app, ing)
		engine.SetCondition(app, mooringv1.ConditionExposed, metav1.ConditionTrue, mooringv1.ReasonIngressApplied,
			fmt.Sprintf("Ingress %s routes to Service %s.", app.Name, app.Name))
	}
}

// setRouteExposed derives Exposed from what the controller of the App's Gateway says of
// the HTTPRoute in its status.parents: applying the route proves nothing (the Gateway may
// not exist, or its listeners may not allow the route), so the App is exposed, and has a
// URL, only once the route is Accepted there with its references resolved.
func setRouteExposed(app *mooringv1.App, route *gatewayv1.HTTPRoute) {
	gw := app.Spec.Expose.Gateway
	gwNamespace := gw.Namespace
	if gwNamespace == "" {
		gwNamespace = app.Namespace
	}
	gateway := gwNamespace + "/" + gw.Name
	var parent *gatewayv1.RouteParentStatus
	if route != nil {
		for i := range route.Status.Parents {
			if isAppGateway(route.Status.Parents[i].ParentRef, app) {
				parent = &route.Status.Parents[i]
				break
			}
		}
	}
	// A condition written for an older generation of the route says nothing of this one.
	current := func(t gatewayv1.RouteConditionType) *metav1.Condition {
		if parent == nil {
			return nil
		}
		c := meta.FindStatusCondition(parent.Conditions, string(t))
		if c == nil || c.ObservedGeneration < route.Generation {
			return nil
		}
		return c
	}
	accepted, resolved := current(gatewayv1.RouteConditionAccepted), current(gatewayv1.RouteConditionResolvedRefs)
	switch {
	case accepted != nil && accepted.Status == metav1.ConditionFalse:
		engine.SetCondition(app, mooringv1.ConditionExposed, metav1.ConditionFalse, validReason(accepted.Reason, mooringv1.ReasonHTTPRouteNotAccepted),
			fmt.Sprintf("Gateway %s does not accept HTTPRoute %s: %s", gateway, app.Name, accepted.Message))
	case resolved != nil && resolved.Status == metav1.ConditionFalse:
		engine.SetCondition(app, mooringv1.ConditionExposed, metav1.ConditionFalse, validReason(resolved.Reason, mooringv1.ReasonHTTPRouteNotAccepted),
			fmt.Sprintf("Gateway %s cannot resolve the references of HTTPRoute %s: %s", gateway, app.Name, resolved.Message))
	case accepted != nil && accepted.Status == metav1.ConditionTrue:
		app.Status.URL = URL(app, nil)
		engine.SetCondition(app, mooringv1.ConditionExposed, metav1.ConditionTrue, mooringv1.ReasonHTTPRouteAccepted,
			fmt.Sprintf("Gateway %s accepts HTTPRoute %s, which routes to Service %s.", gateway, app.Name, app.Name))
	default:
		engine.SetCondition(app, mooringv1.ConditionExposed, metav1.ConditionUnknown, mooringv1.ReasonHTTPRouteApplied,
			fmt.Sprintf("HTTPRoute %s is applied; waiting for the controller of Gateway %s to accept it.", app.Name, gateway))
	}
}

// isAppGateway reports whether ref, a parentRef of the App's HTTPRoute as its status
// repeats it, is the Gateway (and listener) spec.expose.gateway names. The route is in
// the App's namespace, the default of a parentRef's.
func isAppGateway(ref gatewayv1.ParentReference, app *mooringv1.App) bool {
	gw := app.Spec.Expose.Gateway
	namespace, want := app.Namespace, app.Namespace
	if ref.Namespace != nil {
		namespace = string(*ref.Namespace)
	}
	if gw.Namespace != "" {
		want = gw.Namespace
	}
	section := ""
	if ref.SectionName != nil {
		section = string(*ref.SectionName)
	}
	return string(ref.Name) == gw.Name && namespace == want && section == gw.SectionName &&
		(ref.Group == nil || *ref.Group == gatewayv1.GroupName) && (ref.Kind == nil || *ref.Kind == "Gateway")
}

// SetupWithManager registers the App controller, with the index and watches that bring
// an App back when something it references appears or changes.
func SetupWithManager(ctx context.Context, mgr ctrl.Manager, concurrency int) error {
	if err := mgr.GetFieldIndexer().IndexField(ctx, &mooringv1.App{}, RefsField, func(o client.Object) []string {
		return Refs(o.(*mooringv1.App))
	}); err != nil {
		return fmt.Errorf("index Apps by %s: %w", RefsField, err)
	}
	// The manager's cache holds only Mooring's labelled ConfigMaps; spec.envFrom may name
	// any. A second cache holds the metadata (never the data) of all of them.
	references, err := engine.NewReferenceCache(mgr)
	if err != nil {
		return err
	}
	c := mgr.GetClient()
	appsReferencing := func(ctx context.Context, ns string, refs ...string) []reconcile.Request {
		var reqs []reconcile.Request
		for _, ref := range refs {
			list := &mooringv1.AppList{}
			if err := c.List(ctx, list, client.InNamespace(ns), client.MatchingFields{RefsField: ref}); err != nil {
				ctrl.LoggerFrom(ctx).Error(err, "List Apps referencing an object", "ref", ref)
				continue
			}
			for _, a := range list.Items {
				reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&a)})
			}
		}
		return reqs
	}
	byKind := func(kind string) handler.EventHandler {
		return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			return appsReferencing(ctx, o.GetNamespace(), kind+"/"+o.GetName())
		})
	}
	// A Secret is referenced directly (envFrom) or as a database's credentials (bindings):
	// the database index (package database) finds the clusters that use it.
	secrets := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		refs := []string{"Secret/" + o.GetName()}
		dbs := &v1beta1.DatabaseClusterList{}
		if err := c.List(ctx, dbs, client.InNamespace(o.GetNamespace()), client.MatchingFields{database.SecretNameField: o.GetName()}); err == nil {
			for _, db := range dbs.Items {
				refs = append(refs, mooringv1.BindingKindDatabaseCluster+"/"+db.Name)
			}
		}
		return appsReferencing(ctx, o.GetNamespace(), refs...)
	})
	h := Handler{References: references}
	return engine.SetupWithManager[*mooringv1.App](mgr, h, engine.Options{
		Component: Component, Owns: Owned, Optional: Optional, MaxConcurrentReconciles: concurrency,
		// Only Apps with a ConfigMap in spec.envFrom need every ConfigMap's metadata: the
		// informer starts with the first of them.
		OnDemand: []engine.OnDemandWatch{{
			Name:   configMapsWatch,
			Source: source.Kind(references, client.Object(metadataOf("ConfigMap")), byKind("ConfigMap")),
		}},
	}, func(b *builder.Builder) {
		b.Watches(metadataOf("Secret"), secrets, builder.OnlyMetadata).
			Watches(&v1beta1.DatabaseCluster{}, byKind(mooringv1.BindingKindDatabaseCluster)).
			Watches(&mooringv1.CacheInstance{}, byKind(mooringv1.BindingKindCacheInstance))
	}, rollout.WatchPods(Component))
}
