package database_test

import (
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mooringhq/mooring/api/v1beta1"
	"github.com/mooringhq/mooring/internal/testutil"
)

// A cluster whose StatefulSet runs the Bitnami image (made by an earlier release) is not
// rolled onto the instance manager behind its owner's back: the StatefulSet stays as it
// is, and MigrationNeeded with one Warning event says how to move.
func TestBitnamiClusterKeptAsItIs(t *testing.T) {
	ns := env.Namespace(t)
	db := createDB(t, ns, "legacy", v1beta1.PostgreSQL, func(d *v1beta1.DatabaseCluster) { d.Spec.Version = "17" })
	key := client.ObjectKeyFromObject(db)
	sts := &appsv1.StatefulSet{}
	testutil.WaitFor(t, env.Client, key, sts, "StatefulSet", func(*appsv1.StatefulSet) error { return nil })
	// What the previous release's StatefulSet looked like, where it matters.
	const old = "docker.io/bitnami/postgresql:17"
	testutil.Update(t, env.Client, key, sts, func(s *appsv1.StatefulSet) {
		c := &s.Spec.Template.Spec.Containers[0]
		c.Image = old
		c.Command = []string{"/bin/sh", "-c", "exec /opt/bitnami/scripts/postgresql/entrypoint.sh /opt/bitnami/scripts/postgresql/run.sh"}
		s.Spec.Template.Spec.InitContainers = nil
	})
	live := &v1beta1.DatabaseCluster{}
	testutil.WaitFor(t, env.Client, key, live, "MigrationNeeded True", func(d *v1beta1.DatabaseCluster) error {
		c := condition(d, v1beta1.ConditionMigrationNeeded)
		if c == nil || c.Status != metav1.ConditionTrue || c.Reason != v1beta1.ReasonBitnamiLayout {
			return fmt.Errorf("MigrationNeeded %+v", c)
		}
		return nil
	})
	testutil.WaitEvent(t, env.Client, ns, corev1.EventTypeWarning, v1beta1.ReasonBitnamiLayout, db.Name)
	// A later change to the spec still leaves the old StatefulSet alone.
	testutil.Update(t, env.Client, key, live, func(d *v1beta1.DatabaseCluster) { d.Spec.ReplicaCount = 3 })
	testutil.Settle(t)
	if err := env.Client.Get(ctx, key, sts); err != nil {
		t.Fatal(err)
	}
	if img := sts.Spec.Template.Spec.Containers[0].Image; img != old || len(sts.Spec.Template.Spec.InitContainers) != 0 {
		t.Fatalf("the Bitnami-era StatefulSet was changed: image %s, init containers %v", img, sts.Spec.Template.Spec.InitContainers)
	}
	// A current cluster has no such condition.
	current := createDB(t, ns, "current", v1beta1.PostgreSQL, nil)
	testutil.WaitFor(t, env.Client, client.ObjectKeyFromObject(current), live, "a current cluster reconciled", func(d *v1beta1.DatabaseCluster) error {
		if d.Status.ObservedGeneration == 0 {
			return fmt.Errorf("not reconciled yet")
		}
		if c := condition(d, v1beta1.ConditionMigrationNeeded); c != nil {
			return fmt.Errorf("MigrationNeeded %+v on a current cluster", c)
		}
		return nil
	})
}
