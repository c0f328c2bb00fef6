package plugin_test

import (
	"context"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/mooringhq/mooring/internal/plugin"
	"github.com/mooringhq/mooring/internal/testutil"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
)

const backupDatabase = `apiVersion: mooring.dev/v1beta1
kind: DatabaseCluster
metadata:
  name: shop
spec:
  engine: postgresql
  replicaCount: 1
---
apiVersion: mooring.dev/v1
kind: Backup
metadata:
  name: shop-daily
spec:
  databaseRef:
    name: shop
  schedule: "0 3 1 1 *"
  storage:
    size: 1Gi
`

// clockAt is Options whose clock says t, so the backup-now value, and with it the Job's
// name, is known to the test.
func clockAt(t time.Time) *plugin.Options {
	o := plugin.NewOptions(genericiooptions.IOStreams{})
	o.Now = func() time.Time { return t }
	return o
}

// `backup --wait` follows the Job Mooring starts: it returns once kwok completed it, and
// fails, saying why, when the Job fails.
func TestBackupWaitSucceedsAndFails(t *testing.T) {
	t.Parallel()
	ensureOperator(t)
	ns := suite.Namespace(t, "backup-now")
	suite.Apply(t, ns, backupDatabase)
	waitBackupPhase(t, ns, "shop-daily", mooringv1.BackupScheduled)

	first := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	out := mustRun(t, clockAt(first), "backup", "-n", ns, "shop-daily", "--wait", "--timeout", "2m")
	t.Logf("kubectl mooring backup shop-daily --wait:\n%s", out)
	job := plugin.ManualJobName("shop-daily", first.Format(time.RFC3339Nano))
	if !strings.Contains(out, "Job "+job+": Complete") {
		t.Errorf("backup --wait output does not say Job %s completed:\n%s", job, out)
	}
	// The Job the plugin followed is the one Mooring made for the plugin's value.
	got := &batchv1.Job{}
	testutil.WaitFor(t, suite.Client, types.NamespacedName{Namespace: ns, Name: job}, got, "Job "+job, func(j *batchv1.Job) error { return nil })
	if v := got.Annotations["mooring.dev/backup-now-value"]; v != first.Format(time.RFC3339Nano) {
		t.Errorf("Job %s was made for backup-now value %q, want %q", job, v, first.Format(time.RFC3339Nano))
	}

	// A second backup whose Job cannot start a pod and is then failed.
	forbidNewPods(t, ns, 1)
	second := first.Add(time.Hour)
	failing := plugin.ManualJobName("shop-daily", second.Format(time.RFC3339Nano))
	done := make(chan result, 1)
	go func() {
		done <- run(context.Background(), clockAt(second), "backup", "-n", ns, "shop-daily", "--wait", "--timeout", "2m")
	}()
	testutil.WaitFor(t, suite.Client, types.NamespacedName{Namespace: ns, Name: failing}, &batchv1.Job{}, "Job "+failing, func(*batchv1.Job) error { return nil })
	testutil.FinishJob(t, suite.Client, types.NamespacedName{Namespace: ns, Name: failing}, false)
	var r result
	select {
	case r = <-done:
	case <-time.After(rollout):
		t.Fatalf("backup --wait did not return within %s after Job %s failed", rollout, failing)
	}
	if r.err == nil || !strings.Contains(r.err.Error(), "BackoffLimitExceeded") {
		t.Errorf("backup --wait of a failed Job: error %v, want one naming BackoffLimitExceeded\n%s", r.err, r.out)
	}
	t.Logf("kubectl mooring backup shop-daily --wait, failing:\n%s%v", r.out, r.err)
	if !strings.Contains(r.out, "Job "+failing+": Failed") {
		t.Errorf("backup --wait output does not say Job %s failed:\n%s", failing, r.out)
	}
}
