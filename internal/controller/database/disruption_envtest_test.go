package database_test

import (
	"errors"
	"fmt"
	"testing"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mooringhq/mooring/api/v1beta1"
	"github.com/mooringhq/mooring/internal/controller/database"
	"github.com/mooringhq/mooring/internal/testutil"
)

// A cluster of more than one instance has a PodDisruptionBudget it owns: maxUnavailable 1
// over its database pods. A hand edit is undone and a deleted budget comes back (the
// budgets are watched); the budget goes when the cluster drops to one instance and comes
// back with more; and once converged, reconciling the cluster writes nothing.
func TestDatabaseClusterPodDisruptionBudget(t *testing.T) {
	ns := env.Namespace(t)
	db := createDB(t, ns, "ledger", v1beta1.PostgreSQL, nil) // two instances
	key := client.ObjectKeyFromObject(db)
	oneAtATime := func(p *policyv1.PodDisruptionBudget) error {
		want := map[string]string{"app.kubernetes.io/component": database.Component, "app.kubernetes.io/instance": key.Name, "app.kubernetes.io/name": key.Name}
		switch {
		case !metav1.IsControlledBy(p, db):
			return fmt.Errorf("owners %v", p.OwnerReferences)
		case p.Spec.MaxUnavailable == nil || p.Spec.MaxUnavailable.IntValue() != 1 || p.Spec.MinAvailable != nil:
			return fmt.Errorf("maxUnavailable %v minAvailable %v, want 1 and none", p.Spec.MaxUnavailable, p.Spec.MinAvailable)
		case p.Spec.Selector == nil || fmt.Sprint(p.Spec.Selector.MatchLabels) != fmt.Sprint(want):
			return fmt.Errorf("selector %v, want %v", p.Spec.Selector, want)
		}
		return nil
	}
	pdb := &policyv1.PodDisruptionBudget{}
	testutil.WaitFor(t, env.Client, key, pdb, "PodDisruptionBudget of the two-instance cluster", oneAtATime)

	// Someone loosens it by hand: Mooring puts it back.
	patch := client.MergeFrom(pdb.DeepCopy())
	pdb.Spec.MaxUnavailable = ptr.To(intstr.FromInt32(2))
	if err := env.Client.Patch(ctx, pdb, patch, client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, env.Client, key, &policyv1.PodDisruptionBudget{}, "hand-edited maxUnavailable restored to 1", oneAtATime)

	// Someone deletes it: it comes back.
	oldUID := pdb.UID
	if err := env.Client.Delete(ctx, pdb); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, env.Client, key, &policyv1.PodDisruptionBudget{}, "deleted PodDisruptionBudget recreated", func(p *policyv1.PodDisruptionBudget) error {
		if p.UID == oldUID {
			return errors.New("still the old PodDisruptionBudget")
		}
		return oneAtATime(p)
	})

	// One instance: no budget (it would only hold the node's drains); three: back.
	testutil.Update(t, env.Client, key, &v1beta1.DatabaseCluster{}, func(d *v1beta1.DatabaseCluster) { d.Spec.ReplicaCount = 1 })
	testutil.WaitGone(t, env.Client, key, &policyv1.PodDisruptionBudget{}, "PodDisruptionBudget pruned at one instance")
	testutil.Update(t, env.Client, key, &v1beta1.DatabaseCluster{}, func(d *v1beta1.DatabaseCluster) { d.Spec.ReplicaCount = 3 })
	testutil.WaitFor(t, env.Client, key, &policyv1.PodDisruptionBudget{}, "PodDisruptionBudget back at three instances", oneAtATime)

	testutil.ExpectConvergedNoWrites(t, env.Client, database.Component, []types.NamespacedName{key},
		func() *v1beta1.DatabaseCluster { return &v1beta1.DatabaseCluster{} },
		func(d *v1beta1.DatabaseCluster) error {
			if d.Status.ObservedGeneration != d.Generation || d.Status.Phase == "" {
				return fmt.Errorf("observedGeneration %d of %d, phase %q", d.Status.ObservedGeneration, d.Generation, d.Status.Phase)
			}
			return nil
		})
}
