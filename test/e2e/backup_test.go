package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mooringhq/mooring/internal/testutil"
)

const backupDatabase = `apiVersion: mooring.dev/v1beta1
kind: DatabaseCluster
metadata:
  name: orders
spec:
  engine: postgresql
  replicaCount: 1
  deletionPolicy: Snapshot
`

// Two Backups of the database: "minutely" runs every minute into a volume Mooring
// creates; "archive" (first by name, so the final snapshot goes to it) writes to a claim
// that does not exist yet, which holds the final snapshot Job until the test creates it.
const backups = `apiVersion: mooring.dev/v1
kind: Backup
metadata:
  name: minutely
spec:
  databaseRef:
    name: orders
  schedule: "* * * * *"
  retention:
    keepLast: 2
  storage:
    size: 1Gi
---
apiVersion: mooring.dev/v1
kind: Backup
metadata:
  name: archive
spec:
  databaseRef:
    name: orders
  schedule: "0 3 * * *"
  backupPath: /orders
  storage:
    existingClaim: archive-volume
`

const archiveVolume = `apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: archive-volume
spec:
  accessModes: [ReadWriteOnce]
  resources:
    requests:
      storage: 1Gi
`

const scratchBackup = `apiVersion: mooring.dev/v1
kind: Backup
metadata:
  name: scratch
spec:
  databaseRef:
    name: orders
  schedule: "0 3 * * *"
  cleanupPolicy: Delete
`

// Backups on a real cluster, where kwok completes Jobs: the schedule runs, backup-now
// runs once per value, cleanupPolicy Delete runs its Job before the Backup goes, and a
// Snapshot-policy DatabaseCluster goes only after its final snapshot Job has succeeded.
func TestBackupSchedulesSnapshotsAndCleanup(t *testing.T) {
	ns := suite.Namespace(t, "backups")
	// A minutely schedule left behind keeps running Jobs and writing status for the rest
	// of the package, however this test ends; one that cannot be deleted fails this test,
	// rather than showing up as noise in later ones.
	t.Cleanup(func() {
		if out, err := suite.Run("delete", "backups", "--all", "-n", ns, "--wait=true", "--timeout=60s"); err != nil {
			t.Errorf("delete the test's Backups: %v\n%s", err, out)
		}
	})
	suite.Apply(t, ns, backupDatabase)
	suite.WaitField(t, rollout, ns, "databasecluster/orders", ".status.phase", "Running")
	suite.Apply(t, ns, backups)
	suite.WaitField(t, rollout, ns, "backup/minutely", ".status.phase", "Scheduled")
	suite.WaitField(t, rollout, ns, "pvc/minutely-storage", ".status.phase", "Bound")

	// The schedule: a Job within about 70 s of the CronJob, then lastSuccessfulTime.
	created := creationTime(t, ns, "cronjob/minutely")
	var firstJob string
	testutil.Eventually(t, 75*time.Second-time.Since(created), "a Job from CronJob minutely", func() error {
		out, err := suite.Run("get", "jobs", "-n", ns, "-l", "mooring.dev/backup-job=scheduled,app.kubernetes.io/instance=minutely",
			"-o", "jsonpath={.items[*].metadata.name}")
		if err != nil {
			return err
		}
		if firstJob = strings.TrimSpace(out); firstJob == "" {
			return fmt.Errorf("no Job yet")
		}
		return nil
	})
	t.Logf("scheduled Job %s created %s after its CronJob", firstJob, time.Since(created).Round(time.Second))
	testutil.Eventually(t, rollout, "lastSuccessfulTime of Backup minutely", func() error {
		got, err := suite.JSONPath(ns, "backup/minutely", ".status.lastSuccessfulTime")
		if err != nil {
			return err
		}
		if got == "" {
			return fmt.Errorf("not set; conditions: %s", conditions(ns, "backup/minutely"))
		}
		return nil
	})
	suite.WaitField(t, rollout, ns, "backup/minutely", `.status.conditions[?(@.type=="LastBackupSucceeded")].status`, "True")
	t.Logf("lastSuccessfulTime set %s after the CronJob", time.Since(created).Round(time.Second))

	// backup-now: one Job per distinct value, never two for the same one.
	suite.MustRun(t, "annotate", "-n", ns, "backup/minutely", "mooring.dev/backup-now=first")
	manual := func() []string {
		out, _ := suite.Run("get", "jobs", "-n", ns, "-l", "mooring.dev/backup-job=manual,app.kubernetes.io/instance=minutely",
			"-o", "jsonpath={.items[*].metadata.name}")
		return strings.Fields(out)
	}
	testutil.Eventually(t, rollout, "one on-demand Job, complete", func() error {
		jobs := manual()
		if len(jobs) != 1 {
			return fmt.Errorf("on-demand Jobs %v", jobs)
		}
		return jobComplete(ns, jobs[0])
	})
	suite.MustRun(t, "annotate", "-n", ns, "backup/minutely", "example.com/touched=yes")
	suite.MustRun(t, "annotate", "-n", ns, "backup/minutely", "--overwrite", "mooring.dev/backup-now=second")
	testutil.Eventually(t, rollout, "a second on-demand Job for the second value", func() error {
		if jobs := manual(); len(jobs) != 2 {
			return fmt.Errorf("on-demand Jobs %v", jobs)
		}
		return nil
	})

	// cleanupPolicy Delete: the cleanup Job runs, then the Backup and its volume go.
	suite.Apply(t, ns, scratchBackup)
	suite.WaitField(t, rollout, ns, "backup/scratch", ".metadata.finalizers[0]", "mooring.dev/cleanup")
	suite.WaitField(t, rollout, ns, "pvc/scratch-storage", ".status.phase", "Bound")
	suite.MustRun(t, "delete", "-n", ns, "backup/scratch", "--wait=false")
	testutil.Eventually(t, rollout, "Backup scratch gone after its cleanup Job", func() error {
		out, err := suite.Run("get", "backup/scratch", "-n", ns, "--ignore-not-found", "-o", "name")
		if err != nil {
			return err
		}
		if strings.TrimSpace(out) != "" {
			return fmt.Errorf("still there: %s", conditions(ns, "backup/scratch"))
		}
		return nil
	})
	// The volume goes only when the cleanup's report (its container's termination
	// message) says nothing else is in it. Kwok runs no container, so there is no report,
	// and Mooring keeps the volume and says why; the report's both outcomes are tested
	// with envtest (internal/controller/backup) and the script itself with sh.
	events := suite.MustRun(t, "get", "events", "-n", ns, "--field-selector", "involvedObject.name=scratch", "-o", "jsonpath={.items[*].reason}")
	if !strings.Contains(events, "Finalizing") || !strings.Contains(events, "StorageKept") {
		t.Errorf("events about Backup scratch %q, want Finalizing and StorageKept", events)
	}
	testutil.Eventually(t, rollout, "PVC scratch-storage kept, its annotation saying the cleanup's report is missing", func() error {
		kept, err := suite.JSONPath(ns, "pvc/scratch-storage", ".metadata.annotations.mooring\\.dev/kept")
		if err != nil {
			return err
		}
		if !strings.Contains(kept, "report") {
			return fmt.Errorf("annotation mooring.dev/kept %q", kept)
		}
		return nil
	})

	// Snapshot: the final Job cannot run until archive-volume exists; meanwhile the
	// cluster stays, saying what it waits for.
	suite.MustRun(t, "delete", "-n", ns, "databasecluster/orders", "--wait=false")
	suite.WaitField(t, rollout, ns, "job/orders-final-snapshot", ".spec.template.spec.volumes[0].persistentVolumeClaim.claimName", "archive-volume")
	suite.WaitField(t, rollout, ns, "databasecluster/orders", ".status.phase", "Deleting")
	suite.WaitField(t, rollout, ns, "databasecluster/orders", `.status.conditions[?(@.type=="FinalSnapshot")].reason`, "SnapshotInProgress")
	if msg, _ := suite.JSONPath(ns, "databasecluster/orders", `.status.conditions[?(@.type=="FinalSnapshot")].message`); !strings.Contains(msg, "orders-final-snapshot") {
		t.Errorf("FinalSnapshot message %q does not name the Job", msg)
	}
	if err := jobComplete(ns, "orders-final-snapshot"); err == nil {
		t.Fatal("the final snapshot Job completed without its volume; the test proves nothing")
	}
	suite.Apply(t, ns, archiveVolume)
	testutil.Eventually(t, rollout, "DatabaseCluster orders gone after its final snapshot", func() error {
		out, err := suite.Run("get", "databasecluster/orders", "-n", ns, "--ignore-not-found", "-o", "name")
		if err != nil {
			return err
		}
		if strings.TrimSpace(out) != "" {
			return fmt.Errorf("still there: %s", conditions(ns, "databasecluster/orders"))
		}
		return nil
	})
	events = suite.MustRun(t, "get", "events", "-n", ns, "--field-selector", "involvedObject.name=orders", "-o", "jsonpath={.items[*].reason}")
	if !strings.Contains(events, "SnapshotTaken") {
		t.Errorf("events about orders %q, want SnapshotTaken", events)
	}
	// Snapshot keeps the data volumes.
	if _, err := suite.Run("get", "pvc/data-orders-0", "-n", ns); err != nil {
		t.Errorf("data volume gone under deletionPolicy Snapshot: %v", err)
	}
}

func creationTime(t *testing.T, ns, resource string) time.Time {
	t.Helper()
	var out string
	testutil.Eventually(t, rollout, resource, func() error {
		var err error
		out, err = suite.JSONPath(ns, resource, ".metadata.creationTimestamp")
		return err
	})
	ts, err := time.Parse(time.RFC3339, strings.TrimSpace(out))
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

func jobComplete(ns, name string) error {
	out, err := suite.JSONPath(ns, "job/"+name, `.status.conditions[?(@.type=="Complete")].status`)
	if err != nil {
		return err
	}
	if strings.TrimSpace(out) != "True" {
		return fmt.Errorf("Job %s not complete", name)
	}
	return nil
}

// conditions is a one-line summary of an object's conditions, for failure messages.
func conditions(ns, resource string) string {
	out, _ := suite.JSONPath(ns, resource, `.status.conditions[*]}{" "}{.status.phase`)
	return out
}
