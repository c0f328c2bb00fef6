package real

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/api/v1beta1"
	"github.com/mooringhq/mooring/internal/localcluster"
	"github.com/mooringhq/mooring/internal/testutil"
)

// ledgerSQL creates the test's table as the application user (whose database the
// backups dump) and fills it.
var ledgerSQL = map[v1beta1.DatabaseEngine]string{
	v1beta1.PostgreSQL: "SET ROLE app; CREATE TABLE ledger (id int PRIMARY KEY, entry varchar(40)); " +
		"INSERT INTO ledger SELECT g, 'entry ' || g FROM generate_series(1, 500) g;",
	v1beta1.MariaDB: "CREATE TABLE ledger (id int PRIMARY KEY, entry varchar(40)); " +
		"INSERT INTO ledger SELECT seq, CONCAT('entry ', seq) FROM seq_1_to_500;",
}

// checksumSQL sums up the ledger's rows in order, so that two databases with the same
// checksum have the same rows.
var checksumSQL = map[v1beta1.DatabaseEngine]string{
	v1beta1.PostgreSQL: "SELECT count(*) || ':' || md5(string_agg(id || '=' || entry, ',' ORDER BY id)) FROM ledger;",
	v1beta1.MariaDB:    "SET SESSION group_concat_max_len = 1000000; SELECT CONCAT(COUNT(*), ':', MD5(GROUP_CONCAT(id, '=', entry ORDER BY id))) FROM ledger;",
}

// waitRunning waits for the cluster's phase Running and returns it.
func waitRunning(t *testing.T, ns, name string, timeout time.Duration) *v1beta1.DatabaseCluster {
	t.Helper()
	live := &v1beta1.DatabaseCluster{}
	testutil.Eventually(t, timeout, "DatabaseCluster "+name+" Running", func() error {
		if err := suite.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, live); err != nil {
			return err
		}
		if live.Status.Phase != v1beta1.DatabaseRunning {
			return fmt.Errorf("phase %s, conditions %+v, pods:\n%s", live.Status.Phase, live.Status.Conditions, podSummary(ns))
		}
		return nil
	})
	return live
}

// TestBackupAndRestoreForReal: for each engine, an App bound to a cluster connects with
// only its binding files; an on-demand Backup restored into a new cluster
// (spec.bootstrap) gives the same rows; and deleting the cluster under the Snapshot
// policy leaves a final dump that restores too.
func TestBackupAndRestoreForReal(t *testing.T) {
	t.Parallel()
	for _, e := range []dbEngine{pgEngine, mariaEngine} {
		t.Run(string(e.engine), func(t *testing.T) {
			t.Parallel()
			src := createDatabase(t, e, "bk-"+string(e.engine), 1)
			ns := src.Namespace
			waitRunning(t, ns, src.Name, 5*time.Minute)
			e.mustSQL(t, ns, src.Name+"-0", ledgerSQL[e.engine])
			want := e.mustSQL(t, ns, src.Name+"-0", checksumSQL[e.engine])

			boundAppConnects(t, e, src)

			// An on-demand dump of the cluster, into the Backup's own volume.
			b := &mooringv1.Backup{
				ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: ns, Annotations: map[string]string{mooringv1.BackupNowAnnotation: "1"}},
				Spec:       mooringv1.BackupSpec{DatabaseRef: mooringv1.DatabaseReference{Name: src.Name}, Schedule: "0 3 * * *"},
			}
			if err := suite.c.Create(context.Background(), b); err != nil {
				t.Fatal(err)
			}
			testutil.Eventually(t, 3*time.Minute, "Backup nightly's on-demand dump", func() error {
				if err := suite.c.Get(context.Background(), client.ObjectKeyFromObject(b), b); err != nil {
					return err
				}
				if b.Status.LastSuccessfulTime == nil {
					return fmt.Errorf("status %+v, pods:\n%s", b.Status, podSummary(ns))
				}
				return nil
			})

			restored := restoreInto(t, e, ns, "from-backup", b.Name, "")
			if got := e.mustSQL(t, ns, restored.Name+"-0", checksumSQL[e.engine]); got != want {
				t.Fatalf("restored ledger %q, want the source's %q", got, want)
			}
			if rf := restored.Status.RestoredFrom; rf == nil || rf.Backup != b.Name || !strings.HasPrefix(rf.Dump, b.Name+"-") {
				t.Fatalf("status.restoredFrom %+v, want the newest dump of Backup %s", rf, b.Name)
			}

			// The final snapshot: under the Snapshot policy, deleting the cluster leaves a
			// dump in the Backup's volume, which restores into yet another cluster.
			live := &v1beta1.DatabaseCluster{}
			testutil.Update(t, suite.c, client.ObjectKeyFromObject(src), live, func(d *v1beta1.DatabaseCluster) {
				d.Spec.DeletionPolicy = v1beta1.DeletionSnapshot
			})
			if err := suite.c.Delete(context.Background(), live); err != nil {
				t.Fatal(err)
			}
			testutil.WaitGoneWithin(t, 3*time.Minute, suite.c, client.ObjectKeyFromObject(src), &v1beta1.DatabaseCluster{}, "the deleted cluster")
			snapshot := finalSnapshotFile(t, ns, b)
			fromSnapshot := restoreInto(t, e, ns, "from-snapshot", b.Name, snapshot)
			if got := e.mustSQL(t, ns, fromSnapshot.Name+"-0", checksumSQL[e.engine]); got != want {
				t.Fatalf("ledger restored from the final snapshot %q, want %q", got, want)
			}
		})
	}
}

// restoreInto creates a one-pod cluster bootstrapped from the Backup's dump (its newest
// when dump is empty) and waits until it is Running with the dump loaded.
func restoreInto(t *testing.T, e dbEngine, ns, name, backup, dump string) *v1beta1.DatabaseCluster {
	t.Helper()
	db := &v1beta1.DatabaseCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1beta1.DatabaseClusterSpec{Engine: e.engine, Version: e.version, ReplicaCount: 1,
			Bootstrap: &v1beta1.BootstrapSpec{Backup: &v1beta1.BootstrapBackup{Name: backup, Dump: dump}}},
	}
	if err := suite.c.Create(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	live := waitRunning(t, ns, name, 5*time.Minute)
	c := apimeta.FindStatusCondition(live.Status.Conditions, "Restored")
	if c == nil || c.Status != metav1.ConditionTrue || live.Status.RestoredFrom == nil {
		t.Fatalf("Running, but Restored %+v restoredFrom %+v", c, live.Status.RestoredFrom)
	}
	t.Logf("%s: %s", name, c.Message)
	return live
}

// finalSnapshotFile is the final snapshot's file name in the Backup's volume, read on
// this machine: the local cluster's volumes are directories here.
func finalSnapshotFile(t *testing.T, ns string, b *mooringv1.Backup) string {
	t.Helper()
	pvc, err := suite.cs.CoreV1().PersistentVolumeClaims(ns).Get(context.Background(), b.ClaimName(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pv, err := suite.cs.CoreV1().PersistentVolumes().Get(context.Background(), pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil || localcluster.VolumeDir(pv) == "" {
		t.Fatalf("volume of %s: %v %+v", pvc.Name, err, pv)
	}
	dir := localcluster.VolumeDir(pv)
	matches, _ := filepath.Glob(filepath.Join(dir, b.DumpPath(), "final-snapshot-*.sql.gz"))
	if len(matches) != 1 {
		entries, _ := os.ReadDir(filepath.Join(dir, b.DumpPath()))
		t.Fatalf("final snapshots %v in the Backup's volume, want one; it holds %v", matches, entries)
	}
	return filepath.Base(matches[0])
}

// boundAppConnects runs an App bound to db whose only knowledge of the database is its
// binding files, and waits until it reports a query answered.
func boundAppConnects(t *testing.T, e dbEngine, db *v1beta1.DatabaseCluster) {
	t.Helper()
	query := map[v1beta1.DatabaseEngine]string{
		v1beta1.PostgreSQL: `PGPASSWORD="$(cat $d/password)" psql --no-psqlrc -h "$(cat $d/host)" -p "$(cat $d/port)" -U "$(cat $d/username)" -d "$(cat $d/database)" -tAc 'SELECT count(*) FROM ledger'`,
		v1beta1.MariaDB: `MYSQL_PWD="$(cat $d/password)" mariadb -h "$(cat $d/host)" -P "$(cat $d/port)" -u "$(cat $d/username)" -D "$(cat $d/database)" ` +
			`--skip-column-names -e 'SELECT count(*) FROM ledger'`,
	}[e.engine]
	script := `d="$SERVICE_BINDING_ROOT/db"
until n=$(` + query + `); do echo "not yet"; sleep 2; done
echo "connected: $n rows"
exec sleep 86400`
	image := dbClient("", "", e, "", nil).Spec.Containers[0].Image
	app := &mooringv1.App{
		ObjectMeta: metav1.ObjectMeta{Name: "reader", Namespace: db.Namespace},
		Spec: mooringv1.AppSpec{
			Image: image, Replicas: ptr.To[int32](1), Command: []string{"sh", "-c", script},
			SecurityContext: &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](65534)},
			Bindings:        []mooringv1.AppBinding{{Name: "db", Ref: mooringv1.AppBindingRef{Kind: "DatabaseCluster", Name: db.Name}}},
		},
	}
	createApp(t, app)
	testutil.Eventually(t, 3*time.Minute, "App reader connected through its binding", func() error {
		pods := podNames(t, db.Namespace, "app.kubernetes.io/instance=reader")
		if len(pods) != 1 {
			return fmt.Errorf("pods %v", pods)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		out, _ := kubectl(ctx, "-n", db.Namespace, "logs", pods[0])
		if !strings.Contains(out, "connected: 500 rows") {
			return fmt.Errorf("App log %q", out)
		}
		return nil
	})
}
