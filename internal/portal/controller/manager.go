package controller

import (
	"fmt"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	portalv1alpha1 "github.com/mooringhq/mooring/api/portal/v1alpha1"
	"github.com/mooringhq/mooring/internal/apimetrics"
	"github.com/mooringhq/mooring/internal/portal/cluster"
	"github.com/mooringhq/mooring/internal/portal/services"
)

// LeaseName is the Lease the portal's replicas elect the reconciling leader with.
const LeaseName = "mooring-portal-bindings"

// Options configure the portal's manager.
type Options struct {
	// Rest is the portal's own identity; Namespace holds the leader election Lease.
	Rest      *rest.Config
	Namespace string
	// Impersonator and Roles decide what bindings a user should have, as for the API.
	Impersonator *cluster.Impersonator
	Roles        services.RoleNames
	// Protected namespaces never get a user's RoleBinding.
	Protected services.Protected
	// Scheme knows Users and the RBAC kinds.
	Scheme *runtime.Scheme
	// LeaderElection is off only in tests that run one portal.
	LeaderElection bool
}

// NewManager returns a manager running the bindings and teams reconcilers. Its cache
// holds Users, Teams, only the bindings labelled with a portal user id (never the
// cluster's others; a cache of its own holds the RoleBindings labelled with a team: a
// cache selects each kind by one label selector, and no selector matches both), and the
// metadata of every Namespace: those are not the portal's and cannot be narrowed by a
// label, but they are few and their metadata small, and watching them is what lets a
// namespace created after it was granted get its bindings within seconds.
func NewManager(o Options) (manager.Manager, error) {
	owned, err := labels.NewRequirement(portalv1alpha1.IDLabel, selection.Exists, nil)
	if err != nil {
		return nil, err
	}
	sel := labels.NewSelector().Add(*owned)
	scheme := o.Scheme
	mgr, err := manager.New(o.Rest, manager.Options{
		Scheme: scheme,
		// Namespaces need no entry: the watch asks for their metadata only (no labels
		// or spec to select on), cluster-wide.
		Cache: cache.Options{ByObject: map[client.Object]cache.ByObject{
			&rbacv1.RoleBinding{}:        {Label: sel},
			&rbacv1.ClusterRoleBinding{}: {Label: sel},
		}},
		// The portal serves its own /metrics and probes.
		Metrics:                       metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:        "0",
		LeaderElection:                o.LeaderElection,
		LeaderElectionID:              LeaseName,
		LeaderElectionNamespace:       o.Namespace,
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 ptr(15 * time.Second),
		RenewDeadline:                 ptr(10 * time.Second),
		RetryPeriod:                   ptr(2 * time.Second),
	})
	if err != nil {
		return nil, fmt.Errorf("portal manager: %w", err)
	}
	// The reconciler's writes are counted (mooring_api_requests_total), apart from the
	// Lease renewals of leader election, so "in step costs no writes" can be measured.
	writer := rest.CopyConfig(o.Rest)
	apimetrics.Instrument(writer)
	live, err := client.New(writer, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("portal client: %w", err)
	}
	r := &BindingsReconciler{Cache: mgr.GetClient(), Live: mgr.GetAPIReader(),
		Bindings: services.NewBindings(live, o.Impersonator, o.Roles).Protecting(o.Protected)}
	if err := r.SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("bindings controller: %w", err)
	}
	teamBindings, err := teamBindingsCache(mgr)
	if err != nil {
		return nil, err
	}
	tr := &TeamsReconciler{Cache: splitReader{Reader: mgr.GetClient(), bindings: teamBindings}, Live: mgr.GetAPIReader(), Status: live,
		Bindings: r.Bindings}
	if err := tr.SetupWithManager(mgr, teamBindings); err != nil {
		return nil, fmt.Errorf("teams controller: %w", err)
	}
	return mgr, nil
}

// teamBindingsCache adds to mgr a cache of the RoleBindings labelled with a team.
func teamBindingsCache(mgr manager.Manager) (cache.Cache, error) {
	team, err := labels.NewRequirement(portalv1alpha1.TeamLabel, selection.Exists, nil)
	if err != nil {
		return nil, err
	}
	c, err := cache.New(mgr.GetConfig(), cache.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(),
		ByObject: map[client.Object]cache.ByObject{&rbacv1.RoleBinding{}: {Label: labels.NewSelector().Add(*team)}}})
	if err != nil {
		return nil, fmt.Errorf("cache of team RoleBindings: %w", err)
	}
	if err := mgr.Add(c); err != nil {
		return nil, err
	}
	return c, nil
}

func ptr[T any](v T) *T { return &v }
