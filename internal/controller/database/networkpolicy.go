package database

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/api/v1beta1"
	"github.com/mooringhq/mooring/internal/engine"
	"github.com/mooringhq/mooring/internal/instance"
)

// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=mooring.dev,resources=apps;backups,verbs=get;list;watch

// NetworkPolicyName is the cluster's NetworkPolicy: the same name as the cluster.
func NetworkPolicyName(db *v1beta1.DatabaseCluster) string { return db.Name }

// Clients are the workloads besides the cluster's own pods and Jobs that may reach its
// database port: the Apps bound to it and the Backups of it, by name.
type Clients struct {
	Apps, Backups []string
}

// NetworkPolicy admits the database port of the cluster's pods only from its own pods
// (replication, a replica's first copy), Mooring's Jobs for it (credentials check,
// restore, final snapshot, and the Backups' dumps) and the pods of the Apps bound to it;
// everything else in the cluster is refused before it reaches the server. The status
// port stays open: the kubelet probes it from the node, which a NetworkPolicy cannot
// name portably. A CNI without NetworkPolicy support enforces none of it
// (docs/databases.md, "Network access").
func NetworkPolicy(db *v1beta1.DatabaseCluster, clients Clients) *networkingv1.NetworkPolicy {
	peer := func(component, name string) networkingv1.NetworkPolicyPeer {
		return networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{
			mooringv1.ComponentLabel: component, mooringv1.InstanceLabel: name,
		}}}
	}
	from := []networkingv1.NetworkPolicyPeer{
		peer(Component, db.Name),
		peer(credentialsComponent, db.Name),
		peer(restoreComponent, db.Name),
		peer(snapshotComponent, db.Name),
	}
	for _, b := range sortedUnique(clients.Backups) {
		from = append(from, peer(mooringv1.BackupComponent, b))
	}
	for _, a := range sortedUnique(clients.Apps) {
		from = append(from, peer(mooringv1.AppComponent, a))
	}
	tcp := ptr.To(corev1.ProtocolTCP)
	return &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: NetworkPolicyName(db), Labels: engine.Labels(Component, db.Name)},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: engine.SelectorLabels(Component, db.Name)},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{
				{Ports: []networkingv1.NetworkPolicyPort{{Protocol: tcp, Port: ptr.To(intstr.FromInt32(Port(db)))}}, From: from},
				{Ports: []networkingv1.NetworkPolicyPort{{Protocol: tcp, Port: ptr.To(intstr.FromInt32(instance.StatusPort))}}},
			},
		},
	}
}

// clientsOf lists, from the cache, the Apps bound to the cluster and the Backups of it.
func clientsOf(ctx context.Context, c client.Reader, db *v1beta1.DatabaseCluster) (Clients, error) {
	var out Clients
	apps := &mooringv1.AppList{}
	if err := c.List(ctx, apps, client.InNamespace(db.Namespace)); err != nil {
		return out, fmt.Errorf("list Apps: %w", err)
	}
	for _, a := range apps.Items {
		if BindsTo(&a, db.Name) {
			out.Apps = append(out.Apps, a.Name)
		}
	}
	backups := &mooringv1.BackupList{}
	if err := c.List(ctx, backups, client.InNamespace(db.Namespace)); err != nil {
		return out, fmt.Errorf("list Backups: %w", err)
	}
	for _, b := range backups.Items {
		if b.Spec.DatabaseRef.Name == db.Name {
			out.Backups = append(out.Backups, b.Name)
		}
	}
	return out, nil
}

// BindsTo reports whether app has a binding to the DatabaseCluster named name.
func BindsTo(app *mooringv1.App, name string) bool {
	return slices.ContainsFunc(app.Spec.Bindings, func(b mooringv1.AppBinding) bool {
		return b.Ref.Kind == mooringv1.BindingKindDatabaseCluster && b.Ref.Name == name
	})
}

func sortedUnique(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return slices.Compact(out)
}
