package plugin

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

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

// appTree is App → Deployment → ReplicaSets → Pods, Service, ConfigMap.
func (s *Snapshot) appTree(a *mooringv1.App) *Node {
	n := mooringNode("App", a.ObjectMeta, string(a.Status.Phase), a.Status.Conditions)
	n.Ready = ratio(a.Status.AvailableReplicas, appDesiredReplicas(a))
	n.Details = append(n.Details, value("image", a.Spec.Image))
	s.addDeploymentChildren(n, a)
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

// cacheTree is CacheInstance → Deployment → ReplicaSets → Pods, Service, PDB.
func (s *Snapshot) cacheTree(c *mooringv1.CacheInstance) *Node {
	n := mooringNode("CacheInstance", c.ObjectMeta, string(c.Status.Phase), c.Status.Conditions)
	n.Ready = ratio(c.Status.AvailableReplicas, ptr.Deref(c.Spec.Replicas, 1))
	n.Details = append(n.Details, value("engine", fmt.Sprintf("%s %s", c.Spec.Engine, c.Spec.Version)))
	if c.Status.Endpoint != "" {
		n.Details = append(n.Details, value("endpoint", c.Status.Endpoint))
	}
	s.addDeploymentChildren(n, c)
	return n
}

// addDeploymentChildren adds what a Deployment-backed kind owns.
func (s *Snapshot) addDeploymentChildren(n *Node, owner metav1.Object) {
	for _, d := range owned[appsv1.Deployment](s.Deployments, owner) {
		n.Children = append(n.Children, s.deploymentNode(d))
	}
	for _, svc := range owned[corev1.Service](s.Services, owner) {
		n.Children = append(n.Children, serviceNode(svc))
	}
	for _, cm := range owned[corev1.ConfigMap](s.ConfigMaps, owner) {
		n.Children = append(n.Children, configMapNode(cm))
	}
	for _, pdb := range owned[policyv1.PodDisruptionBudget](s.DisruptionBudget, owner) {
		n.Children = append(n.Children, disruptionBudgetNode(pdb))
	}
}

// databaseTree is DatabaseCluster → StatefulSet → Pods and PVCs, Services, the
// credentials Secret (its name only), and the Backups of the database.
func (s *Snapshot) databaseTree(d *v1beta1.DatabaseCluster, now time.Time) *Node {
	n := mooringNode("DatabaseCluster", d.ObjectMeta, string(d.Status.Phase), d.Status.Conditions)
	n.Ready = ratio(d.Status.ReadyReplicas, d.Spec.ReplicaCount)
	n.Details = append(n.Details, value("engine", fmt.Sprintf("%s %s", d.Spec.Engine, d.Spec.Version)))
	if d.Status.PrimaryEndpoint != "" {
		n.Details = append(n.Details, value("primary", d.Status.PrimaryEndpoint))
	}
	for _, sts := range owned[appsv1.StatefulSet](s.StatefulSets, d) {
		n.Children = append(n.Children, s.statefulSetNode(sts))
	}
	for _, svc := range owned[corev1.Service](s.Services, d) {
		n.Children = append(n.Children, serviceNode(svc))
	}
	if d.Spec.SecretName != "" {
		n.Children = append(n.Children, s.secretNode(d.Namespace, d.Spec.SecretName))
	}
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

// backupTree is Backup → CronJob → its last Jobs, the on-demand Jobs, and the volume,
// with the last success, the last failure and the next run.
func (s *Snapshot) backupTree(b *mooringv1.Backup, now time.Time) *Node {
	n := mooringNode("Backup", b.ObjectMeta, string(b.Status.Phase), b.Status.Conditions)
	n.Details = append(n.Details, value("schedule", b.Spec.Schedule))
	n.addDetails(at("last success", b.Status.LastSuccessfulTime), at("last failure", b.Status.LastFailedTime))
	var cronJobs []*batchv1.CronJob
	for _, cj := range owned[batchv1.CronJob](s.CronJobs, b) {
		cronJobs = append(cronJobs, cj)
		n.Children = append(n.Children, s.cronJobNode(cj, now))
	}
	if len(cronJobs) == 1 {
		if next := nextRun(cronJobs[0], now); next != nil {
			n.Details = append(n.Details, Detail{Name: "next run", Time: next})
		}
	}
	for _, j := range latestJobs(owned[batchv1.Job](s.Jobs, b), jobsShown) {
		n.Children = append(n.Children, jobNode(j))
	}
	for i := range s.Claims {
		if c := &s.Claims[i]; c.Namespace == b.Namespace && c.Name == b.ClaimName() {
			n.Children = append(n.Children, claimNode(c))
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
