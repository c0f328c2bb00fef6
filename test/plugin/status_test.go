package plugin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/api/v1beta1"
	"github.com/mooringhq/mooring/internal/objecttree"
	"github.com/mooringhq/mooring/internal/plugin"
	"github.com/mooringhq/mooring/internal/testutil"
)

// fixedNow is the clock of golden outputs. It lies far in the future so that every time
// the cluster records (a Job's failure, a condition's transition) is before it, whatever
// day the test runs: normalize tells past times from future ones by it.
var fixedNow = time.Date(2099, 12, 3, 12, 0, 0, 0, time.UTC)

var (
	replicaSetHash = regexp.MustCompile(`^(.*)-[a-z0-9]{6,10}$`)
	podSuffix      = regexp.MustCompile(`-[a-z0-9]{5}$`)
	nodeName       = regexp.MustCompile(`^mooring-node-\d+$`)
	timestamp      = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`)
)

// normalize fixes what differs between runs: every object is 10 minutes old, past times
// (also those in condition messages) were 5 minutes ago (future ones come from fixedNow and the schedule already), generated
// name suffixes and the kwok node a pod landed on are replaced by placeholders.
func normalize(roots []*objecttree.Node) {
	for _, r := range roots {
		r.Walk(func(n *objecttree.Node) {
			if !n.Created.IsZero() {
				n.Created = fixedNow.Add(-10 * time.Minute)
			}
			// A kind's conditions are listed in the order they were first set, which
			// depends on which reconcile got how far first: the goldens list them by type.
			slices.SortStableFunc(n.Conditions, func(a, b objecttree.Condition) int { return strings.Compare(a.Type, b.Type) })
			for i := range n.Conditions {
				n.Conditions[i].Since = fixedNow.Add(-10 * time.Minute)
				n.Conditions[i].Message = timestamp.ReplaceAllString(n.Conditions[i].Message, fixedNow.Add(-5*time.Minute).Format(time.RFC3339))
			}
			for i, d := range n.Details {
				if d.Time != nil && d.Time.Before(fixedNow) {
					t := fixedNow.Add(-5 * time.Minute)
					n.Details[i].Time = &t
				}
				if d.Name == "node" && nodeName.MatchString(d.Value) {
					n.Details[i].Value = "mooring-node-N"
				}
			}
			if n.Kind != "ReplicaSet" {
				return
			}
			n.Name = replicaSetHash.ReplaceAllString(n.Name, "$1-<hash>")
			for _, p := range n.Children {
				if podSuffix.MatchString(p.Name) {
					p.Name = n.Name + "-<id>"
				}
			}
		})
	}
}

// waitTree polls `status REF -o json` until check accepts the tree, so that goldens are
// taken (with -update) of a cluster that has settled.
func waitTree(t *testing.T, ns, ref string, what string, check func(*objecttree.Node) error) {
	t.Helper()
	testutil.Eventually(t, rollout, ref+": "+what, func() error {
		r := run(context.Background(), nil, "status", "-n", ns, ref, "-o", "json")
		if r.err != nil {
			return r.err
		}
		n := &objecttree.Node{}
		if err := json.Unmarshal([]byte(r.out), n); err != nil {
			return err
		}
		return check(n)
	})
}

// settled accepts a tree whose every line is healthy (or has no health of its own).
func settled(root *objecttree.Node) error {
	var bad []string
	root.Walk(func(n *objecttree.Node) {
		if n.State != objecttree.StateOK && n.State != objecttree.StateNeutral {
			bad = append(bad, fmt.Sprintf("%s/%s %s", n.Kind, n.Name, n.Status))
		}
	})
	if len(bad) > 0 {
		return fmt.Errorf("not healthy: %v", bad)
	}
	return nil
}

// goldenOptions are Options whose output is comparable with a golden file.
func goldenOptions() *plugin.Options {
	o := plugin.NewOptions(genericiooptions.IOStreams{})
	o.Now = func() time.Time { return fixedNow }
	o.BeforeRender = normalize
	return o
}

// eventuallyGolden runs the command until its output equals the golden file: the cluster
// converges on its own schedule, and the last difference is reported on timeout.
func eventuallyGolden(t *testing.T, file string, args ...string) string {
	t.Helper()
	var out string
	testutil.Eventually(t, rollout, "kubectl mooring "+strings.Join(args, " ")+" to print "+file, func() error {
		r := run(context.Background(), goldenOptions(), args...)
		if r.err != nil {
			return fmt.Errorf("%w: %s", r.err, r.errOut)
		}
		out = r.out
		return golden(file, out)
	})
	return out
}

const statusDatabase = `apiVersion: mooring.dev/v1beta1
kind: DatabaseCluster
metadata:
  name: orders
spec:
  engine: postgresql
  replicaCount: 2
  storage:
    size: 1Gi
---
apiVersion: mooring.dev/v1
kind: Backup
metadata:
  name: orders-nightly
spec:
  databaseRef:
    name: orders
  schedule: "0 3 1 1 *"
  storage:
    size: 1Gi
`

// An App and a CacheInstance (the samples) as trees: each line, the colours only when
// asked for, and shell completion of their names.
func TestStatusOfAppAndCache(t *testing.T) {
	t.Parallel()
	ensureOperator(t)
	ns := suite.Namespace(t, "status-app")
	suite.Apply(t, ns, sample(t, "mooring_v1_app.yaml"))
	suite.Apply(t, ns, sample(t, "mooring_v1_cacheinstance.yaml"))

	waitTree(t, ns, "app/hello", "every line healthy", settled)
	waitTree(t, ns, "cacheinstance/sessions", "every line healthy", settled)
	out := eventuallyGolden(t, "status-app.txt", "status", "-n", ns, "app/hello")
	if strings.Contains(out, "\x1b[") {
		t.Errorf("colour codes in output to a buffer:\n%q", out)
	}
	eventuallyGolden(t, "status-cacheinstance.txt", "status", "-n", ns, "cacheinstance/sessions")
	coloured := mustRun(t, goldenOptions(), "status", "-n", ns, "app/hello", "--color=always")
	if !strings.Contains(coloured, "\x1b[32mRunning\x1b[0m") {
		t.Errorf("--color=always: no green Running in\n%q", coloured)
	}
	all := mustRun(t, goldenOptions(), "status", "-n", ns, "--show-conditions")
	if !strings.Contains(all, "Ready=True") || !strings.Contains(all, "CacheInstance/sessions") {
		t.Errorf("status --show-conditions of the namespace shows neither all conditions nor both objects:\n%s", all)
	}

	comp := mustRun(t, nil, "__complete", "status", "-n", ns, "app/")
	if !strings.Contains(comp, "app/hello\n") {
		t.Errorf("completion of app/ = %q, want app/hello", comp)
	}
	comp = mustRun(t, nil, "__complete", "pause", "-n", ns, "")
	if !strings.Contains(comp, "cacheinstance/\n") {
		t.Errorf("completion of kinds = %q, want cacheinstance/", comp)
	}
}

// A DatabaseCluster with one pod not ready and a failed backup: the tree shows the
// replica's state, the conditions that explain the phase, and the failed Job; -o json and
// -o yaml give the same tree as data.
func TestStatusOfDatabaseWithUnreadyPodAndFailedBackup(t *testing.T) {
	t.Parallel()
	ensureOperator(t)
	ctx := context.Background()
	ns := suite.Namespace(t, "status-db")
	suite.Apply(t, ns, statusDatabase)
	db := &v1beta1.DatabaseCluster{}
	testutil.Eventually(t, rollout, "DatabaseCluster orders Running with 2 ready", func() error {
		if err := suite.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "orders"}, db); err != nil {
			return err
		}
		if db.Status.Phase != v1beta1.DatabaseRunning || db.Status.ReadyReplicas != 2 {
			return fmt.Errorf("phase %q, %d ready", db.Status.Phase, db.Status.ReadyReplicas)
		}
		return nil
	})
	waitBackupPhase(t, ns, "orders-nightly", mooringv1.BackupScheduled)

	// No pod may start from now on, so the on-demand Job cannot run; it is then failed the
	// way the Job controller fails one (no container runs on kwok nodes).
	forbidNewPods(t, ns, 2)
	value := "2026-12-03T11:55:00Z"
	job := failBackup(t, ns, "orders-nightly", value)
	testutil.Eventually(t, rollout, "Backup orders-nightly to record the failure", func() error {
		b := &mooringv1.Backup{}
		if err := suite.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "orders-nightly"}, b); err != nil {
			return err
		}
		if b.Status.LastFailedTime == nil || b.Status.LastBackupJob != job {
			return fmt.Errorf("lastFailedTime %v, lastBackupJob %q", b.Status.LastFailedTime, b.Status.LastBackupJob)
		}
		return nil
	})
	breakPod(t, ns, "orders-1")
	waitTree(t, ns, "databasecluster/orders", "NotReady with 1 of 2 ready and the Backup waiting", func(root *objecttree.Node) error {
		var backup, sts string
		root.Walk(func(n *objecttree.Node) {
			switch n.Kind {
			case "Backup":
				backup = n.Status
			case "StatefulSet":
				sts = n.Ready
			}
		})
		if root.Status != "NotReady" || root.Ready != "1/2" || sts != "1/2" || backup != "Pending" {
			return fmt.Errorf("DatabaseCluster %s %s, StatefulSet %s, Backup %s", root.Status, root.Ready, sts, backup)
		}
		return nil
	})

	eventuallyGolden(t, "status-databasecluster.txt", "status", "-n", ns, "databasecluster/orders")
	eventuallyGolden(t, "status-backup.txt", "status", "-n", ns, "backup/orders-nightly")

	// -o json and -o yaml: the same tree as data.
	jsonOut := mustRun(t, goldenOptions(), "status", "-n", ns, "databasecluster/orders", "-o", "json")
	yamlOut := mustRun(t, goldenOptions(), "status", "-n", ns, "databasecluster/orders", "-o", "yaml")
	var fromJSON, fromYAML objecttree.Node
	if err := json.Unmarshal([]byte(jsonOut), &fromJSON); err != nil {
		t.Fatalf("-o json: %v\n%s", err, jsonOut)
	}
	if err := yaml.Unmarshal([]byte(yamlOut), &fromYAML); err != nil {
		t.Fatalf("-o yaml: %v\n%s", err, yamlOut)
	}
	a, _ := json.Marshal(fromJSON)
	b, _ := json.Marshal(fromYAML)
	if string(a) != string(b) {
		t.Errorf("-o json and -o yaml differ:\n%s\n%s", a, b)
	}
	// The Backup's status may still move (its failed Job is observed a moment after the
	// text tree settled): compare again until it matches or the deadline passes.
	testutil.Eventually(t, time.Minute, "status -o json to print status-databasecluster.json", func() error {
		return golden("status-databasecluster.json", mustRun(t, goldenOptions(), "status", "-n", ns, "databasecluster/orders", "-o", "json"))
	})
	var unready, failedJob bool
	fromJSON.Walk(func(n *objecttree.Node) {
		unready = unready || (n.Kind == "Pod" && n.Name == "orders-1" && n.Ready == "0/1")
		failedJob = failedJob || (n.Kind == "Job" && n.Name == job && n.Status == "Failed")
	})
	if !unready || !failedJob {
		t.Errorf("-o json: unready pod orders-1 found %v, failed Job %s found %v", unready, job, failedJob)
	}
	if strings.Contains(jsonOut, "password") {
		t.Errorf("the tree carries Secret data:\n%s", jsonOut)
	}
}

// waitBackupPhase waits for a Backup's phase.
func waitBackupPhase(t *testing.T, ns, name string, phase mooringv1.BackupPhase) {
	t.Helper()
	testutil.Eventually(t, rollout, fmt.Sprintf("Backup %s %s", name, phase), func() error {
		b := &mooringv1.Backup{}
		if err := suite.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, b); err != nil {
			return err
		}
		if b.Status.Phase != phase {
			return fmt.Errorf("phase %q, conditions %v", b.Status.Phase, b.Status.Conditions)
		}
		return nil
	})
}

// forbidNewPods caps the namespace at the pods it has, so a Job's pod is refused at
// admission and the Job can only be failed by hand.
func forbidNewPods(t *testing.T, ns string, pods int) {
	t.Helper()
	q := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "no-more-pods", Namespace: ns},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(int64(pods), resource.DecimalSI)}},
	}
	if err := suite.Client.Create(context.Background(), q); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, time.Minute, "the quota controller to count the pods", func() error {
		if err := suite.Client.Get(context.Background(), client.ObjectKeyFromObject(q), q); err != nil {
			return err
		}
		used, ok := q.Status.Used[corev1.ResourcePods]
		if !ok || used.Value() != int64(pods) {
			return fmt.Errorf("used %v", q.Status.Used)
		}
		return nil
	})
}

// failBackup triggers an on-demand backup with the annotation (as a user would) and, once
// Mooring created its Job, fails the Job. It returns the Job's name.
func failBackup(t *testing.T, ns, backup, value string) string {
	t.Helper()
	b := &mooringv1.Backup{}
	testutil.Update(t, suite.Client, client.ObjectKey{Namespace: ns, Name: backup}, b, func(b *mooringv1.Backup) {
		if b.Annotations == nil {
			b.Annotations = map[string]string{}
		}
		b.Annotations[mooringv1.BackupNowAnnotation] = value
	})
	name := plugin.ManualJobName(backup, value)
	testutil.WaitFor(t, suite.Client, types.NamespacedName{Namespace: ns, Name: name}, &batchv1.Job{}, "Job "+name, func(*batchv1.Job) error { return nil })
	testutil.FinishJob(t, suite.Client, types.NamespacedName{Namespace: ns, Name: name}, false)
	return name
}

// breakPod makes a running pod not ready with a crashing container, as a kubelet would
// report it (kwok only readies pods that are still Pending, so it stays this way).
func breakPod(t *testing.T, ns, name string) {
	t.Helper()
	testutil.Eventually(t, testutil.DefaultTimeout, "pod "+name+" marked not ready", func() error {
		p := &corev1.Pod{}
		if err := suite.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, p); err != nil {
			return err
		}
		now := metav1.Now()
		for i, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady || c.Type == corev1.ContainersReady {
				p.Status.Conditions[i].Status, p.Status.Conditions[i].LastTransitionTime = corev1.ConditionFalse, now
				p.Status.Conditions[i].Reason = "ContainersNotReady"
				p.Status.Conditions[i].Message = "containers with unready status: [database]"
			}
		}
		for i := range p.Status.ContainerStatuses {
			cs := &p.Status.ContainerStatuses[i]
			cs.Ready, cs.RestartCount = false, 3
			cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 40s restarting failed container"}}
		}
		return suite.Client.Status().Update(context.Background(), p)
	})
}
