package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	portalv1alpha1 "github.com/mooringhq/mooring/api/portal/v1alpha1"
	"github.com/mooringhq/mooring/internal/portal/services"
)

// Team condition type and reasons.
const (
	// TeamReady is True when every RoleBinding of the team is in place.
	TeamReady = "Ready"
	// ReasonBound: the team's bindings are in place.
	ReasonBound = "Bound"
	// ReasonNamespaceMissing: some namespaces of the team do not exist (yet).
	ReasonNamespaceMissing = "NamespaceMissing"
)

// TeamsReconciler keeps each Team's RoleBindings (one per namespace, its members'
// identities as subjects) and its status in step with the Team and with the Users in
// it, keyed by the team's name, so that bindings whose Team is gone still map to a
// request.
type TeamsReconciler struct {
	// Cache reads Teams, Users and the team RoleBindings from the manager's caches;
	// Live reads them from the API server, only once the cache shows something to change.
	Cache, Live client.Reader
	// Status writes the Team's status (the portal's counted client).
	Status   client.StatusClient
	Bindings *services.Bindings
}

// teamState is one team as a reader shows it: the Team (nil when gone), its members,
// what it takes to bring its bindings in step, and the status that says so.
type teamState struct {
	team    *portalv1alpha1.Team
	members []*portalv1alpha1.User
	plan    services.Plan
}

// Reconcile brings the bindings and status of the team req.Name in step. It writes
// nothing when the cache shows them in step; otherwise it decides again on what the
// API server says now, so a stale cache never undoes a change the API just made.
func (r *TeamsReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	st, err := r.state(ctx, r.Cache, req.Name)
	if err != nil || r.inStep(st) {
		return reconcile.Result{}, err
	}
	if st, err = r.state(ctx, r.Live, req.Name); err != nil || r.inStep(st) {
		return reconcile.Result{}, err
	}
	res := reconcile.Result{}
	applyErr := r.Bindings.Apply(ctx, st.plan)
	var missing *services.MissingNamespaceError
	if errors.As(applyErr, &missing) {
		logf.FromContext(ctx).Info("Some namespaces of the team do not exist; trying again later", "team", req.Name, "namespaces", missing.Namespaces)
		res.RequeueAfter, applyErr = missingNamespaceRetry, nil
	}
	if applyErr != nil {
		return res, fmt.Errorf("bring the bindings of team %s in step: %w", req.Name, applyErr)
	}
	if !st.plan.Empty() {
		logf.FromContext(ctx).Info("Brought team bindings in step", "team", req.Name,
			"created", len(st.plan.Create), "updated", len(st.plan.Update), "deleted", len(st.plan.Delete))
	}
	if st.team == nil {
		return res, nil
	}
	want := r.status(st, missing)
	if equality.Semantic.DeepEqual(st.team.Status, want) {
		return res, nil
	}
	t := st.team.DeepCopy()
	t.Status = want
	if err := r.Status.Status().Update(ctx, t); err != nil && !apierrors.IsNotFound(err) {
		return res, fmt.Errorf("update the status of team %s: %w", req.Name, err)
	}
	return res, nil
}

// inStep reports whether st needs no write: bindings in step and a status saying so.
func (r *TeamsReconciler) inStep(st teamState) bool {
	return st.plan.Empty() && (st.team == nil || equality.Semantic.DeepEqual(st.team.Status, r.status(st, nil)))
}

// status is the status st's team should have once its plan is applied; missing names
// the namespaces whose binding could not be created.
func (r *TeamsReconciler) status(st teamState, missing *services.MissingNamespaceError) portalv1alpha1.TeamStatus {
	s := *st.team.Status.DeepCopy()
	s.ObservedGeneration = st.team.Generation
	s.Members = nil
	for _, u := range st.members {
		s.Members = append(s.Members, u.Spec.Username)
	}
	bound := r.Bindings.TeamNamespaces(st.team)
	c := metav1.Condition{Type: TeamReady, Status: metav1.ConditionTrue, Reason: ReasonBound, ObservedGeneration: st.team.Generation,
		Message: fmt.Sprintf("%d members bound in %d namespaces", len(st.members), len(bound))}
	if len(st.members) == 0 {
		c.Message = "no members: nothing is bound"
	}
	if skipped := len(st.team.Spec.Namespaces) - len(bound); skipped > 0 {
		c.Message += fmt.Sprintf("; %d protected namespaces are never bound", skipped)
	}
	if missing != nil {
		c.Status, c.Reason = metav1.ConditionFalse, ReasonNamespaceMissing
		c.Message = fmt.Sprintf("namespaces %v do not exist; they are bound once they do", missing.Namespaces)
	}
	meta.SetStatusCondition(&s.Conditions, c)
	return s
}

func (r *TeamsReconciler) state(ctx context.Context, rd client.Reader, name string) (teamState, error) {
	var st teamState
	t := &portalv1alpha1.Team{}
	switch err := rd.Get(ctx, client.ObjectKey{Name: name}, t); {
	case apierrors.IsNotFound(err):
	case err != nil:
		return st, fmt.Errorf("get Team %s: %w", name, err)
	case t.DeletionTimestamp.IsZero():
		st.team = t
	}
	if st.team != nil {
		var users portalv1alpha1.UserList
		if err := rd.List(ctx, &users); err != nil {
			return st, fmt.Errorf("list Users: %w", err)
		}
		st.members = services.Members(st.team, users.Items)
	}
	p, err := r.Bindings.PlanForTeam(ctx, rd, name, st.team, st.members)
	st.plan = p
	return st, err
}

// teamIndex indexes Teams in the manager's cache by who may be in them
// ("user/<username>" for a named or bound member, "group/<group>" for a group) and by
// namespace ("namespace/<name>"), so a User or a Namespace maps to its teams without
// listing them all.
const teamIndex = "portal.mooring.dev/team-keys"

// teamKeys is the index function of teamIndex. A team's bound members (status) are
// keys too: a user who left it, by a new groups claim or a new name, or was deleted,
// still finds the team that must drop it.
func teamKeys(o client.Object) []string {
	t, ok := o.(*portalv1alpha1.Team)
	if !ok {
		return nil
	}
	var keys []string
	for _, m := range slices.Concat(t.Spec.Members, t.Status.Members) {
		keys = append(keys, "user/"+m)
	}
	for _, g := range t.Spec.Groups {
		keys = append(keys, "group/"+g)
	}
	for _, ns := range t.Spec.Namespaces {
		keys = append(keys, "namespace/"+ns)
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// userKeys are the teamIndex keys under which the teams of u are found.
func userKeys(u *portalv1alpha1.User) []string {
	keys := []string{"user/" + u.Spec.Username}
	if u.Spec.SSO != nil {
		for _, g := range u.Status.Groups {
			keys = append(keys, "group/"+g)
		}
	}
	return keys
}

// teamsBy maps keys of teamIndex to the requests of the teams found under them.
func (r *TeamsReconciler) teamsBy(ctx context.Context, keys ...string) []reconcile.Request {
	seen := map[string]bool{}
	var reqs []reconcile.Request
	for _, k := range keys {
		var l portalv1alpha1.TeamList
		if err := r.Cache.List(ctx, &l, client.MatchingFields{teamIndex: k}); err != nil {
			// A cache list fails only when the index is missing; the resync still comes.
			logf.FromContext(ctx).Error(err, "List the Teams of a key", "key", k)
			continue
		}
		for _, t := range l.Items {
			if !seen[t.Name] {
				seen[t.Name] = true
				reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKey{Name: t.Name}})
			}
		}
	}
	return reqs
}

// byTeamLabel maps a team's RoleBinding to the request of its team.
func byTeamLabel(_ context.Context, rb *rbacv1.RoleBinding) []reconcile.Request {
	if name := rb.Labels[portalv1alpha1.TeamLabel]; name != "" {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: name}}}
	}
	return nil
}

// SetupWithManager registers the reconciler: Teams, the Users in them (by name or by
// group, before and after a change), the RoleBindings of bindings (a cache holding only
// those labelled with a team, see NewManager), and the metadata of Namespaces, so a
// namespace created after a team named it gets the team's binding at once.
func (r *TeamsReconciler) SetupWithManager(mgr manager.Manager, bindings cache.Cache) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &portalv1alpha1.Team{}, teamIndex, teamKeys); err != nil {
		return fmt.Errorf("index Teams by member, group and namespace: %w", err)
	}
	return builder.ControllerManagedBy(mgr).
		Named("portal-teams").
		For(&portalv1alpha1.Team{}).
		Watches(&portalv1alpha1.User{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			return r.teamsBy(ctx, userKeys(o.(*portalv1alpha1.User))...)
		})).
		WatchesRawSource(source.Kind(bindings, &rbacv1.RoleBinding{}, handler.TypedEnqueueRequestsFromMapFunc(byTeamLabel))).
		WatchesMetadata(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, ns client.Object) []reconcile.Request {
			return r.teamsBy(ctx, "namespace/"+ns.GetName())
		}), builder.WithPredicates(namespaceArrived)).
		Complete(r)
}

// splitReader reads RoleBindings from one cache (the team bindings') and everything
// else from another (the manager's).
type splitReader struct {
	client.Reader
	bindings client.Reader
}

func (s splitReader) List(ctx context.Context, l client.ObjectList, opts ...client.ListOption) error {
	if _, ok := l.(*rbacv1.RoleBindingList); ok {
		return s.bindings.List(ctx, l, opts...)
	}
	return s.Reader.List(ctx, l, opts...)
}
