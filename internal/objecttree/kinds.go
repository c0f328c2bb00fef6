package objecttree

import (
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/robfig/cron/v3"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/api/v1beta1"
)

// notVisible is the detail of an object whose kind the user may not list.
const notVisible = "not visible to you"

// jobsShown is how many of the newest Jobs a tree shows under a CronJob or a Backup.
const jobsShown = 3

// phaseState judges a Mooring phase: the good ones, the failed ones, and the rest.
func phaseState(phase string) State {
	switch phase {
	case "Running", "Scheduled":
		return StateOK
	case "Error", "Failed":
		return StateError
	case "":
		return StateNeutral
	}
	return StateWarning
}

// mooringNode is the line of a Mooring object: phase, age, conditions.
func mooringNode(kind string, m metav1.ObjectMeta, phase string, conds []metav1.Condition) *Node {
	return &Node{Kind: kind, Name: m.Name, Namespace: m.Namespace, Created: m.CreationTimestamp.Time,
		Status: phase, State: phaseState(phase), Conditions: fromMetaConditions(conds)}
}

// A child Mooring creates without an owner reference (one that must outlive its object,
// or be made while the object is being deleted) is found by its labels, which name the
// object (instance) and carry its kind's component: api/v1's AppComponent and the like, api/v1beta1's
// DatabaseComponent.
// appTree is App → Deployment → ReplicaSets → Pods, and the App's Service, ConfigMap,
// PodDisruptionBudget, HorizontalPodAutoscaler, Ingress and HTTPRoute.
func (s *Snapshot) appTree(a *mooringv1.App, now time.Time) *Node {
	n := mooringNode(mooringv1.KindApp, a.ObjectMeta, string(a.Status.Phase), a.Status.Conditions)
	n.Ready = ratio(a.Status.AvailableReplicas, appDesiredReplicas(a))
	n.Details = append(n.Details, value("image", a.Spec.Image))
	s.addChildren(n, a, now, mooringv1.AppComponent)
	return n
}

// appDesiredReplicas is the count an App's pods are measured against: what the operator
// reports it wants (the autoscaler's count when autoscaled), or the spec before it has.
func appDesiredReplicas(a *mooringv1.App) int32 {
	if a.Status.DesiredReplicas > 0 {
		return a.Status.DesiredReplicas
	}
	return ptr.Deref(a.Spec.Replicas, 1)
}

// cacheTree is CacheInstance → Deployment → ReplicaSets → Pods, Service, binding
// ConfigMap, PDB.
func (s *Snapshot) cacheTree(c *mooringv1.CacheInstance, now time.Time) *Node {
	n := mooringNode(mooringv1.KindCacheInstance, c.ObjectMeta, string(c.Status.Phase), c.Status.Conditions)
	n.Ready = ratio(c.Status.AvailableReplicas, ptr.Deref(c.Spec.Replicas, 1))
	n.Details = append(n.Details, value("engine", fmt.Sprintf("%s %s", c.Spec.Engine, c.Spec.Version)))
	if c.Status.Endpoint != "" {
		n.Details = append(n.Details, value("endpoint", c.Status.Endpoint))
	}
	s.addChildren(n, c, now, mooringv1.CacheInstanceComponent)
	return n
}

// addChildren adds below n what belongs to the Mooring object root directly: what it
// owns, and what carries its labels (instance root's name, one of components) without
// any owner reference. Every kind of the Snapshot is looked at, so whatever Mooring makes
// shows; Pods, ReplicaSets and the volumes of a StatefulSet's claim templates hang below
// their workload instead. A child already there (same kind and name) is not added again.
func (s *Snapshot) addChildren(n *Node, root metav1.Object, now time.Time, components ...string) {
	mine := func(o metav1.Object) bool { return ownedBy(o, root) || labelledFor(o, root, components) }
	var sets []*appsv1.StatefulSet
	for _, d := range belonging[appsv1.Deployment](s.Deployments, mine) {
		n.addChild(s.deploymentNode(d))
	}
	for _, sts := range belonging[appsv1.StatefulSet](s.StatefulSets, mine) {
		sets = append(sets, sts)
		n.addChild(s.statefulSetNode(sts))
	}
	for _, svc := range belonging[corev1.Service](s.Services, mine) {
		n.addChild(serviceNode(svc))
	}
	for _, ing := range belonging[networkingv1.Ingress](s.Ingresses, mine) {
		n.addChild(ingressNode(ing))
	}
	for _, r := range belonging[gatewayv1.HTTPRoute](s.Routes, mine) {
		n.addChild(routeNode(r))
	}
	for _, cm := range belonging[corev1.ConfigMap](s.ConfigMaps, mine) {
		n.addChild(configMapNode(cm))
	}
	for _, sec := range belonging[metav1.PartialObjectMetadata](s.Secrets, mine) {
		n.addChild(s.secretNode(sec.Namespace, sec.Name))
	}
	for _, pdb := range belonging[policyv1.PodDisruptionBudget](s.DisruptionBudget, mine) {
		n.addChild(disruptionBudgetNode(pdb))
	}
	for _, np := range belonging[networkingv1.NetworkPolicy](s.NetworkPolicies, mine) {
		n.addChild(networkPolicyNode(np))
	}
	for _, hpa := range belonging[autoscalingv2.HorizontalPodAutoscaler](s.Autoscalers, mine) {
		n.addChild(autoscalerNode(hpa))
	}
	for _, cj := range belonging[batchv1.CronJob](s.CronJobs, mine) {
		n.addChild(s.cronJobNode(cj, now))
	}
	for _, j := range latestJobs(belonging[batchv1.Job](s.Jobs, mine), jobsShown) {
		n.addChild(jobNode(j))
	}
	for _, c := range belonging[corev1.PersistentVolumeClaim](s.Claims, mine) {
		if !slices.ContainsFunc(sets, func(sts *appsv1.StatefulSet) bool { return claimOf(c.Name, sts) }) {
			n.addChild(claimNode(c))
		}
	}
}

// labelledFor reports whether o carries the labels Mooring gives what it makes for root
// (managed by Mooring, instance root's name, one of components) and has no owner: what
// Mooring creates without an owner reference. An object with an owner belongs below it.
func labelledFor(o, root metav1.Object, components []string) bool {
	l := o.GetLabels()
	return o.GetNamespace() == root.GetNamespace() && len(o.GetOwnerReferences()) == 0 &&
		l[mooringv1.ManagedByLabel] == mooringv1.ManagedBy && l[mooringv1.InstanceLabel] == root.GetName() &&
		slices.Contains(components, l[mooringv1.ComponentLabel])
}

// belonging returns pointers to the items mine accepts.
func belonging[T any, PT interface {
	*T
	metav1.Object
}](items []T, mine func(metav1.Object) bool) []PT {
	var out []PT
	for i := range items {
		if p := PT(&items[i]); mine(p) {
			out = append(out, p)
		}
	}
	return out
}

// addChild appends c unless n has a child of its kind and name already.
func (n *Node) addChild(c *Node) {
	for _, have := range n.Children {
		if have.Kind == c.Kind && have.Name == c.Name {
			return
		}
	}
	n.Children = append(n.Children, c)
}

// databaseTree is DatabaseCluster → StatefulSet → Pods and PVCs, the Services (primary,
// -ro, -headless), the binding ConfigMap, the credentials and superuser Secrets (their
// names only), the credentials, restore and final snapshot Jobs and volume, and the
// Backups of the database.
func (s *Snapshot) databaseTree(d *v1beta1.DatabaseCluster, now time.Time) *Node {
	n := mooringNode(mooringv1.KindDatabaseCluster, d.ObjectMeta, string(d.Status.Phase), d.Status.Conditions)
	n.Ready = ratio(d.Status.ReadyReplicas, d.Spec.ReplicaCount)
	n.Details = append(n.Details, value("engine", fmt.Sprintf("%s %s", d.Spec.Engine, d.Spec.Version)))
	if d.Status.PrimaryEndpoint != "" {
		n.Details = append(n.Details, value("primary", d.Status.PrimaryEndpoint))
	}
	// By name first: the credentials Secret may be the user's, without Mooring's labels,
	// and both show as Missing when they are not there.
	if d.Spec.SecretName != "" {
		n.addChild(s.secretNode(d.Namespace, d.Spec.SecretName))
	}
	n.addChild(s.secretNode(d.Namespace, v1beta1.AdminSecretName(d.Name)))
	s.addChildren(n, d, now, v1beta1.DatabaseComponent, v1beta1.FinalSnapshotComponent)
	for i := range s.Backups {
		b := &s.Backups[i]
		if b.Namespace == d.Namespace && b.Spec.DatabaseRef.Name == d.Name {
			bn := s.backupTree(b, now)
			bn.Namespace = ""
			n.Children = append(n.Children, bn)
		}
	}
	return n
}

// secretNode names a Secret and says whether it exists; its data is never read. When the
// user may not list Secrets, whether it exists is Unknown.
func (s *Snapshot) secretNode(ns, name string) *Node {
	if s.hidden("Secrets") {
		return &Node{Kind: "Secret", Name: name, Status: "Unknown", State: StateNeutral, Details: []Detail{{Name: notVisible}}}
	}
	for _, sec := range s.Secrets {
		if sec.Namespace == ns && sec.Name == name {
			return &Node{Kind: "Secret", Name: name, Created: sec.CreationTimestamp.Time, Status: "Present", State: StateOK}
		}
	}
	return &Node{Kind: "Secret", Name: name, Status: "Missing", State: StateWarning}
}

// backupTree is Backup → CronJob → its last Jobs, the on-demand and cleanup Jobs, and the
// volume, with the last success, the last failure and the next run.
func (s *Snapshot) backupTree(b *mooringv1.Backup, now time.Time) *Node {
	n := mooringNode(mooringv1.KindBackup, b.ObjectMeta, string(b.Status.Phase), b.Status.Conditions)
	n.Details = append(n.Details, value("schedule", b.Spec.Schedule))
	n.addDetails(at("last success", b.Status.LastSuccessfulTime), at("last failure", b.Status.LastFailedTime))
	s.addChildren(n, b, now, mooringv1.BackupComponent)
	if cronJobs := owned[batchv1.CronJob](s.CronJobs, b); len(cronJobs) == 1 {
		if next := nextRun(cronJobs[0], now); next != nil {
			n.Details = append(n.Details, Detail{Name: "next run", Time: next})
		}
	}
	// The volume by name: spec.storage.existingClaim names the user's, without labels.
	for i := range s.Claims {
		if c := &s.Claims[i]; c.Namespace == b.Namespace && c.Name == b.ClaimName() {
			n.addChild(claimNode(c))
		}
	}
	return n
}

func (s *Snapshot) cronJobNode(cj *batchv1.CronJob, now time.Time) *Node {
	n := &Node{Kind: "CronJob", Name: cj.Name, Created: cj.CreationTimestamp.Time, Status: "Scheduled", State: StateOK}
	if ptr.Deref(cj.Spec.Suspend, false) {
		n.Status, n.State = "Suspended", StateWarning
	}
	if active := len(cj.Status.Active); active > 0 {
		n.Details = append(n.Details, value("active", fmt.Sprint(active)))
	}
	n.addDetails(at("last schedule", cj.Status.LastScheduleTime), at("last success", cj.Status.LastSuccessfulTime))
	if next := nextRun(cj, now); next != nil {
		n.Details = append(n.Details, Detail{Name: "next run", Time: next})
	}
	for _, j := range latestJobs(owned[batchv1.Job](s.Jobs, cj), jobsShown) {
		n.Children = append(n.Children, jobNode(j))
	}
	return n
}

// nextRun is when the CronJob runs next, in its time zone (the controller's, UTC here,
// when it names none); nil when suspended or unparsable.
func nextRun(cj *batchv1.CronJob, now time.Time) *time.Time {
	if ptr.Deref(cj.Spec.Suspend, false) {
		return nil
	}
	sched, err := cron.ParseStandard(cj.Spec.Schedule)
	if err != nil {
		return nil
	}
	loc := time.UTC
	if tz := ptr.Deref(cj.Spec.TimeZone, ""); tz != "" {
		if l, err := time.LoadLocation(tz); err == nil {
			loc = l
		}
	}
	next := sched.Next(now.In(loc))
	return &next
}
