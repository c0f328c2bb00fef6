package objecttree

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

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
	NetworkPolicies  []networkingv1.NetworkPolicy
	Autoscalers      []autoscalingv2.HorizontalPodAutoscaler
	Ingresses        []networkingv1.Ingress
	// Routes are the Gateway API's HTTPRoutes; none when its CRDs are not installed.
	Routes []gatewayv1.HTTPRoute
	// Secrets are metadata only: the plugin never reads a Secret's data.
	Secrets []metav1.PartialObjectMetadata
	// Hidden are the kinds (plural, e.g. "StatefulSets") the user may not list: RBAC
	// answered Forbidden. Their objects are missing from the trees, and the output says so.
	Hidden []string
}

// hidden reports whether the user could not list the kind (plural, e.g. "Secrets").
func (s *Snapshot) hidden(kinds string) bool {
	return slices.Contains(s.Hidden, kinds)
}

// ReadSnapshot lists every kind of the Snapshot in namespace ns ("" for all namespaces).
// A kind the user may not list (Forbidden; the shipped mooring-developer and
// mooring-auditor roles cannot list Secrets) is left out and named in Hidden; only when
// none of Mooring's own kinds may be listed does it fail.
func ReadSnapshot(ctx context.Context, c client.Reader, ns string) (*Snapshot, error) {
	s := &Snapshot{}
	secrets := &metav1.PartialObjectMetadataList{}
	secrets.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
	apps, caches, dbs, backups := &mooringv1.AppList{}, &mooringv1.CacheInstanceList{}, &v1beta1.DatabaseClusterList{}, &mooringv1.BackupList{}
	deps, rss, stss, pods := &appsv1.DeploymentList{}, &appsv1.ReplicaSetList{}, &appsv1.StatefulSetList{}, &corev1.PodList{}
	claims, svcs, cms := &corev1.PersistentVolumeClaimList{}, &corev1.ServiceList{}, &corev1.ConfigMapList{}
	cjs, jobs, pdbs := &batchv1.CronJobList{}, &batchv1.JobList{}, &policyv1.PodDisruptionBudgetList{}
	hpas, ings, routes := &autoscalingv2.HorizontalPodAutoscalerList{}, &networkingv1.IngressList{}, &gatewayv1.HTTPRouteList{}
	nps := &networkingv1.NetworkPolicyList{}
	lists := []struct {
		kinds   string
		list    client.ObjectList
		mooring bool
	}{
		{"Apps", apps, true}, {"CacheInstances", caches, true}, {"DatabaseClusters", dbs, true}, {"Backups", backups, true},
		{"Deployments", deps, false}, {"ReplicaSets", rss, false}, {"StatefulSets", stss, false}, {"Pods", pods, false},
		{"PersistentVolumeClaims", claims, false}, {"Services", svcs, false}, {"ConfigMaps", cms, false},
		{"CronJobs", cjs, false}, {"Jobs", jobs, false}, {"PodDisruptionBudgets", pdbs, false}, {"Secrets", secrets, false},
		{"HorizontalPodAutoscalers", hpas, false}, {"Ingresses", ings, false}, {"HTTPRoutes", routes, false},
		{"NetworkPolicies", nps, false},
	}
	var forbidden error
	visibleMooring := 0
	for _, l := range lists {
		if err := c.List(ctx, l.list, client.InNamespace(ns)); err != nil {
			if meta.IsNoMatchError(err) && !l.mooring {
				continue // a kind the cluster does not serve (the Gateway API's without its CRDs): none to show
			}
			if !apierrors.IsForbidden(err) {
				return nil, fmt.Errorf("list %s: %w", l.kinds, err)
			}
			s.Hidden = append(s.Hidden, l.kinds)
			if l.mooring && forbidden == nil {
				forbidden = err
			}
			continue
		}
		if l.mooring {
			visibleMooring++
		}
	}
	if visibleMooring == 0 {
		return nil, fmt.Errorf("list Mooring's objects: %w", forbidden)
	}
	s.Apps, s.Caches, s.Databases, s.Backups = apps.Items, caches.Items, dbs.Items, backups.Items
	s.Deployments, s.ReplicaSets, s.StatefulSets, s.Pods = deps.Items, rss.Items, stss.Items, pods.Items
	s.Claims, s.Services, s.ConfigMaps = claims.Items, svcs.Items, cms.Items
	s.CronJobs, s.Jobs, s.DisruptionBudget = cjs.Items, jobs.Items, pdbs.Items
	s.NetworkPolicies = nps.Items
	s.Autoscalers, s.Ingresses, s.Routes = hpas.Items, ings.Items, routes.Items
	s.Secrets = secrets.Items
	return s, nil
}

// HiddenNote says which kinds the user could not list; "" when none.
func (s *Snapshot) HiddenNote() string {
	if len(s.Hidden) == 0 {
		return ""
	}
	return "Not visible to you (forbidden to list): " + strings.Join(s.Hidden, ", ") + "; objects of these kinds are not shown."
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

// Roots returns every Mooring object of the Snapshot as a tree: Apps, CacheInstances,
// DatabaseClusters (with their Backups), and Backups whose database is not there.
func (s *Snapshot) Roots(now time.Time) []*Node {
	var out []*Node
	for i := range s.Apps {
		out = append(out, s.appTree(&s.Apps[i], now))
	}
	for i := range s.Caches {
		out = append(out, s.cacheTree(&s.Caches[i], now))
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
