package plugin

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/api/v1beta1"
)

// Snapshot is everything a status tree is built from, read once: the Mooring objects of
// a namespace (or of all namespaces) and the kinds they own. Building trees from it is
// pure, so the trees are tested without a cluster.
type Snapshot struct {
	Apps             []mooringv1.App
	Caches           []mooringv1.CacheInstance
	Databases        []v1beta1.DatabaseCluster
	Backups          []mooringv1.Backup
	Deployments      []appsv1.Deployment
	ReplicaSets      []appsv1.ReplicaSet
	StatefulSets     []appsv1.StatefulSet
	Pods             []corev1.Pod
	Claims           []corev1.PersistentVolumeClaim
	Services         []corev1.Service
	ConfigMaps       []corev1.ConfigMap
	CronJobs         []batchv1.CronJob
	Jobs             []batchv1.Job
	DisruptionBudget []policyv1.PodDisruptionBudget
	// Secrets are metadata only: the plugin never reads a Secret's data.
	Secrets []metav1.PartialObjectMetadata
}

// readSnapshot lists every kind of the Snapshot in namespace ns ("" for all namespaces).
func readSnapshot(ctx context.Context, c client.Reader, ns string) (*Snapshot, error) {
	s := &Snapshot{}
	secrets := &metav1.PartialObjectMetadataList{}
	secrets.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
	lists := []client.ObjectList{
		&mooringv1.AppList{}, &mooringv1.CacheInstanceList{}, &v1beta1.DatabaseClusterList{},
		&mooringv1.BackupList{}, &appsv1.DeploymentList{}, &appsv1.ReplicaSetList{},
		&appsv1.StatefulSetList{}, &corev1.PodList{}, &corev1.PersistentVolumeClaimList{},
		&corev1.ServiceList{}, &corev1.ConfigMapList{}, &batchv1.CronJobList{},
		&batchv1.JobList{}, &policyv1.PodDisruptionBudgetList{}, secrets,
	}
	for _, l := range lists {
		if err := c.List(ctx, l, client.InNamespace(ns)); err != nil {
			return nil, fmt.Errorf("list %T: %w", l, err)
		}
	}
	s.Apps = lists[0].(*mooringv1.AppList).Items
	s.Caches = lists[1].(*mooringv1.CacheInstanceList).Items
	s.Databases = lists[2].(*v1beta1.DatabaseClusterList).Items
	s.Backups = lists[3].(*mooringv1.BackupList).Items
	s.Deployments = lists[4].(*appsv1.DeploymentList).Items
	s.ReplicaSets = lists[5].(*appsv1.ReplicaSetList).Items
	s.StatefulSets = lists[6].(*appsv1.StatefulSetList).Items
	s.Pods = lists[7].(*corev1.PodList).Items
	s.Claims = lists[8].(*corev1.PersistentVolumeClaimList).Items
	s.Services = lists[9].(*corev1.ServiceList).Items
	s.ConfigMaps = lists[10].(*corev1.ConfigMapList).Items
	s.CronJobs = lists[11].(*batchv1.CronJobList).Items
	s.Jobs = lists[12].(*batchv1.JobList).Items
	s.DisruptionBudget = lists[13].(*policyv1.PodDisruptionBudgetList).Items
	s.Secrets = secrets.Items
	return s, nil
}

// ownedBy reports whether obj has an owner reference to owner.
func ownedBy(obj metav1.Object, owner metav1.Object) bool {
	if obj.GetNamespace() != owner.GetNamespace() {
		return false
	}
	for _, ref := range obj.GetOwnerReferences() {
		if ref.UID == owner.GetUID() {
			return true
		}
	}
	return false
}

// owned returns pointers to the items that owner owns.
func owned[T any, PT interface {
	*T
	metav1.Object
}](items []T, owner metav1.Object) []PT {
	var out []PT
	for i := range items {
		if p := PT(&items[i]); ownedBy(p, owner) {
			out = append(out, p)
		}
	}
	return out
}

// roots returns every Mooring object of the Snapshot as a tree: Apps, CacheInstances,
// DatabaseClusters (with their Backups), and Backups whose database is not there.
func (s *Snapshot) roots(now time.Time) []*Node {
	var out []*Node
	for i := range s.Apps {
		out = append(out, s.appTree(&s.Apps[i]))
	}
	for i := range s.Caches {
		out = append(out, s.cacheTree(&s.Caches[i]))
	}
	for i := range s.Databases {
		out = append(out, s.databaseTree(&s.Databases[i], now))
	}
	for i := range s.Backups {
		b := &s.Backups[i]
		if s.database(b.Namespace, b.Spec.DatabaseRef.Name) == nil {
			out = append(out, s.backupTree(b, now))
		}
	}
	for _, n := range out {
		n.Walk(func(c *Node) { sortChildren(c.Children) })
	}
	return out
}

// database finds a DatabaseCluster of the Snapshot.
func (s *Snapshot) database(ns, name string) *v1beta1.DatabaseCluster {
	for i := range s.Databases {
		if d := &s.Databases[i]; d.Namespace == ns && d.Name == name {
			return d
		}
	}
	return nil
}
