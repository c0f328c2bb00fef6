package faults

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mooringhq/mooring/api/v1beta1"
	"github.com/mooringhq/mooring/internal/controller/database"
	"github.com/mooringhq/mooring/internal/testutil"
)

// A DatabaseCluster with deletionPolicy Snapshot is deleted; the operator is killed while
// its final snapshot Job runs (its pod held Pending by cordoned nodes). The restarted
// operator keeps the cluster, with one Job, until the snapshot succeeds, then lets it go.
func TestKilledDuringFinalSnapshot(t *testing.T) {
	suite.EnsureOperator(t)
	ns := suite.Namespace(t, "snapshot")
	suite.Apply(t, ns, "apiVersion: mooring.dev/v1beta1\nkind: DatabaseCluster\nmetadata:\n  name: orders\nspec:\n  engine: postgresql\n  deletionPolicy: Snapshot\n")
	suite.WaitField(t, 2*time.Minute, ns, "databasecluster/orders", ".status.phase", "Running")
	key := client.ObjectKey{Namespace: ns, Name: "orders"}
	db := &v1beta1.DatabaseCluster{}
	if err := suite.Client.Get(ctx, key, db); err != nil {
		t.Fatal(err)
	}
	jobKey := client.ObjectKey{Namespace: ns, Name: database.FinalSnapshotJobName(db)}

	nodes := &corev1.NodeList{}
	if err := suite.Client.List(ctx, nodes); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		suite.MustRun(t, "cordon", n.Name)
	}
	uncordon := func() {
		for _, n := range nodes.Items {
			_, _ = suite.Run("uncordon", n.Name)
		}
	}
	t.Cleanup(uncordon)

	suite.MustRun(t, "delete", "-n", ns, "databasecluster/orders", "--wait=false")
	testutil.Eventually(t, time.Minute, "the final snapshot Job to run", func() error {
		job := &batchv1.Job{}
		if err := suite.Client.Get(ctx, jobKey, job); err != nil {
			return err
		}
		if job.Status.Active == 0 {
			return fmt.Errorf("Job has no active pod yet: %+v", job.Status)
		}
		return nil
	})
	if err := syscall.Kill(suite.Operator.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	stopOperator(t)
	suite.EnsureOperator(t)

	// The restarted operator reports the snapshot in progress and keeps the cluster.
	testutil.Eventually(t, time.Minute, "FinalSnapshot in progress after the restart", func() error {
		if err := suite.Client.Get(ctx, key, db); err != nil {
			return err
		}
		c := meta.FindStatusCondition(db.Status.Conditions, v1beta1.ConditionFinalSnapshot)
		if c == nil || c.Reason != v1beta1.ReasonSnapshotInProgress || db.Status.Phase != v1beta1.DatabaseDeleting {
			return fmt.Errorf("phase %s, condition %+v", db.Status.Phase, c)
		}
		return nil
	})
	jobs := &batchv1.JobList{}
	if err := suite.Client.List(ctx, jobs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if len(jobs.Items) != 1 {
		t.Errorf("%d Jobs after the restart, want the one final snapshot Job", len(jobs.Items))
	}

	t0 := time.Now()
	uncordon()
	testutil.Eventually(t, 2*time.Minute, "the cluster deleted after its snapshot", func() error {
		err := suite.Client.Get(ctx, key, &v1beta1.DatabaseCluster{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there (%w)", err)
	})
	// The Job went with the cluster it belonged to; its outcome is in the events.
	events := &eventsv1.EventList{}
	if err := suite.Client.List(ctx, events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	taken := false
	for _, e := range events.Items {
		taken = taken || e.Reason == v1beta1.ReasonSnapshotTaken
		if e.Reason == v1beta1.ReasonSnapshotSkipped {
			t.Errorf("the cluster was deleted without its snapshot: %s", e.Note)
		}
	}
	if !taken {
		t.Errorf("the cluster was deleted but no %s event says the snapshot succeeded", v1beta1.ReasonSnapshotTaken)
	}
	t.Logf("snapshot succeeded and cluster deleted %s after the nodes were uncordoned", time.Since(t0).Round(100*time.Millisecond))
}
