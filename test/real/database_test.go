package real

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mooringhq/mooring/api/v1beta1"
	"github.com/mooringhq/mooring/internal/controller/database"
	"github.com/mooringhq/mooring/internal/localcluster"
	"github.com/mooringhq/mooring/internal/testutil"
)

// dbEngine is what the database tests need to know of an engine: how to run SQL in a
// database pod as the superuser, over the instance manager's private socket, as an
// operator with `kubectl exec` rights would.
type dbEngine struct {
	engine  v1beta1.DatabaseEngine
	version string
	// sql is the command that runs its standard input as SQL and prints rows
	// tab-separated, without headers.
	sql []string
	// server names the server process (its comm), to kill it by PID.
	server string
}

var (
	pgEngine = dbEngine{v1beta1.PostgreSQL, "18", []string{"psql", "--no-psqlrc", "--quiet", "--tuples-only", "--no-align",
		"--field-separator=\t", "--set=ON_ERROR_STOP=1", "--host=/run/mooring/pg", "--username=postgres", "--dbname=postgres"}, "postgres"}
	mariaEngine = dbEngine{v1beta1.MariaDB, "11.8", []string{"mariadb", "--socket=/run/mooring/mysqld.sock", "--batch",
		"--skip-column-names", "--database=app"}, "mariadbd"}
)

// execSQL runs sql in pod as the superuser and returns the output.
func (e dbEngine) execSQL(ctx context.Context, ns, pod, sql string) (string, error) {
	cmd := kubectlCmd(ctx, append([]string{"-n", ns, "exec", "-i", pod, "-c", "database", "--"}, e.sql...)...)
	cmd.Stdin = strings.NewReader(sql)
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

func (e dbEngine) mustSQL(t *testing.T, ns, pod, sql string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := e.execSQL(ctx, ns, pod, sql)
	if err != nil {
		t.Fatalf("SQL on %s failed: %v\n%s", pod, err, out)
	}
	return out
}

// createDatabase creates a DatabaseCluster of e with replicas pods in a namespace that
// enforces the restricted Pod Security Standard, as a platform team's would.
func createDatabase(t *testing.T, e dbEngine, name string, replicas int32) *v1beta1.DatabaseCluster {
	t.Helper()
	ns := newNamespace(t, name)
	mustKubectl(t, "label", "namespace", ns, "pod-security.kubernetes.io/enforce=restricted")
	db := &v1beta1.DatabaseCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       v1beta1.DatabaseClusterSpec{Engine: e.engine, Version: e.version, ReplicaCount: replicas},
	}
	if err := suite.c.Create(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	return db
}

// waitReplicating waits until every pod is ready and every replica streams and has
// replayed all the primary has (lag 0), and returns the cluster.
func waitReplicating(t *testing.T, db *v1beta1.DatabaseCluster, timeout time.Duration) *v1beta1.DatabaseCluster {
	t.Helper()
	live := &v1beta1.DatabaseCluster{}
	testutil.Eventually(t, timeout, "DatabaseCluster "+db.Name+" Running with its replicas caught up", func() error {
		if err := suite.c.Get(context.Background(), client.ObjectKeyFromObject(db), live); err != nil {
			return err
		}
		c := apimeta.FindStatusCondition(live.Status.Conditions, v1beta1.ConditionReplicationHealthy)
		if live.Status.Phase != v1beta1.DatabaseRunning || c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("phase %s, ReplicationHealthy %+v, instances %+v, pods:\n%s", live.Status.Phase, c, live.Status.Instances, podSummary(db.Namespace))
		}
		if len(live.Status.Instances) != int(db.Spec.ReplicaCount) {
			return fmt.Errorf("status.instances %+v, want %d", live.Status.Instances, db.Spec.ReplicaCount)
		}
		for _, in := range live.Status.Instances {
			lag := in.LagBytes
			if lag == nil {
				lag = in.GTIDGap
			}
			if in.Role == v1beta1.RoleReplica && (lag == nil || *lag != 0 || !in.Ready) {
				return fmt.Errorf("instance %+v: want a ready replica with lag 0", in)
			}
		}
		return nil
	})
	return live
}

func podSummary(ns string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, _ := kubectl(ctx, "-n", ns, "get", "pods", "-o", "wide")
	return out
}

// TestDatabasesReplicateForReal: for each engine Mooring runs here, a primary and two
// replicas on the real node: each pod's /metrics tells its role and, on the replicas,
// the replication lag; a row written on the primary is read on every replica and
// the reported lag returns to zero; the server killed by its PID restarts and the
// replicas follow again; a password changed in the Secret logs in and the old one no
// longer does.
func TestDatabasesReplicateForReal(t *testing.T) {
	t.Parallel()
	for _, e := range []dbEngine{pgEngine, mariaEngine} {
		t.Run(string(e.engine), func(t *testing.T) {
			t.Parallel()
			db := createDatabase(t, e, "repl-"+string(e.engine), 3)
			ns := db.Namespace
			waitReplicating(t, db, 6*time.Minute)
			checkDatabaseMetrics(t, e, db)

			primary, replicas := db.Name+"-0", []string{db.Name + "-1", db.Name + "-2"}
			serviceLeadsTo(t, ns, db.Name, primary)
			serviceLeadsTo(t, ns, db.Name+"-ro", replicas...)
			e.mustSQL(t, ns, primary, "CREATE TABLE ledger (id int PRIMARY KEY, entry varchar(40)); INSERT INTO ledger VALUES (1, 'moored'), (2, 'cast off');")
			rowsOnReplicas(t, e, ns, replicas, "moored,cast off")
			waitReplicating(t, db, 2*time.Minute)

			// The server, not the manager: the manager reports the exit and the kubelet
			// restarts the container; the replicas reconnect by themselves.
			killServer(t, e, ns, primary)
			testutil.Eventually(t, 3*time.Minute, primary+" restarted by the kubelet and ready", func() error {
				p, err := suite.cs.CoreV1().Pods(ns).Get(context.Background(), primary, metav1.GetOptions{})
				if err != nil {
					return err
				}
				if len(p.Status.ContainerStatuses) == 0 || p.Status.ContainerStatuses[0].RestartCount < 1 || !p.Status.ContainerStatuses[0].Ready {
					return fmt.Errorf("container statuses %+v", p.Status.ContainerStatuses)
				}
				return nil
			})
			e.mustSQL(t, ns, primary, "INSERT INTO ledger VALUES (3, 'moored again');")
			rowsOnReplicas(t, e, ns, replicas, "moored,cast off,moored again")
			waitReplicating(t, db, 3*time.Minute)

			rotatePassword(t, e, db)
		})
	}
}

// rowsOnReplicas waits until every replica returns want for the ledger's entries.
func rowsOnReplicas(t *testing.T, e dbEngine, ns string, replicas []string, want string) {
	t.Helper()
	for _, r := range replicas {
		testutil.Eventually(t, 2*time.Minute, "replica "+r+" to have "+want, func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			out, err := e.execSQL(ctx, ns, r, "SELECT entry FROM ledger ORDER BY id;")
			if got := strings.ReplaceAll(out, "\n", ","); err != nil || got != want {
				return fmt.Errorf("replica answered %q (%w)", got, err)
			}
			return nil
		})
	}
}

// killServer kills the database server process (the instance manager's child) of pod
// with SIGKILL, found by its PID on this machine.
func killServer(t *testing.T, e dbEngine, ns, pod string) {
	t.Helper()
	p, err := suite.cs.CoreV1().Pods(ns).Get(context.Background(), pod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	manager, err := localcluster.ContainerPID(context.Background(), suite.cs, ns, pod, p.Status.ContainerStatuses[0].Name)
	if err != nil {
		t.Fatal(err)
	}
	// children lists what each thread started: Go starts processes from any thread.
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", manager))
	var children []string
	for _, task := range tasks {
		b, err := os.ReadFile(task)
		if err != nil {
			t.Fatal(err)
		}
		children = append(children, strings.Fields(string(b))...)
	}
	for _, f := range children {
		comm, _ := os.ReadFile("/proc/" + f + "/comm")
		if strings.TrimSpace(string(comm)) == e.server {
			if out, err := exec.Command("kill", "-9", f).CombinedOutput(); err != nil {
				t.Fatalf("kill %s: %v: %s", f, err, out)
			}
			t.Logf("killed %s (pid %s) of %s", e.server, f, pod)
			return
		}
	}
	t.Fatalf("no %s among the children (%s) of %s's instance manager (pid %d)", e.server, children, pod, manager)
}

// rotatePassword changes the password in the credentials Secret and checks, from a
// client pod that reads the Secret like an application, that the new one logs in once
// CredentialsSynced says so and the old one no longer does.
func rotatePassword(t *testing.T, e dbEngine, db *v1beta1.DatabaseCluster) {
	t.Helper()
	ns, secretName := db.Namespace, db.Name+"-credentials"
	secret, err := suite.cs.CoreV1().Secrets(ns).Get(context.Background(), secretName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	oldPassword := string(secret.Data[database.PasswordKey])
	secret.Data[database.PasswordKey] = []byte("rotated-" + strconv.FormatInt(time.Now().UnixNano(), 36))
	if _, err := suite.cs.CoreV1().Secrets(ns).Update(context.Background(), secret, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 3*time.Minute, "CredentialsSynced True at revision 2", func() error {
		live := &v1beta1.DatabaseCluster{}
		if err := suite.c.Get(context.Background(), client.ObjectKeyFromObject(db), live); err != nil {
			return err
		}
		c := apimeta.FindStatusCondition(live.Status.Conditions, v1beta1.ConditionCredentialsSynced)
		if c == nil || c.Status != metav1.ConditionTrue || live.Status.Credentials == nil || live.Status.Credentials.Revision < 2 {
			return fmt.Errorf("CredentialsSynced %+v, credentials %+v", c, live.Status.Credentials)
		}
		return nil
	})
	host := db.Name + "." + ns + ".svc"
	// Over TLS, the server verified with the binding's CA, as a bound App would.
	login := map[v1beta1.DatabaseEngine]string{
		v1beta1.PostgreSQL: `PGSSLMODE=verify-full PGSSLROOTCERT=/tmp/ca.crt PGPASSWORD="$PW" psql --no-psqlrc -h ` + host + ` -U "$USER_NAME" -d postgres -tAc 'SELECT 42'`,
		v1beta1.MariaDB:    `MYSQL_PWD="$PW" mariadb --ssl --ssl-ca=/tmp/ca.crt --ssl-verify-server-cert -h ` + host + ` -u "$USER_NAME" --skip-column-names -e 'SELECT 42'`,
	}[e.engine]
	script := `set -u
printf '%s' "$CA" > /tmp/ca.crt
PW="$NEW_PASSWORD"; ` + login + ` || { echo "new password refused"; exit 1; }
PW="$OLD_PASSWORD"; if ` + login + `; then echo "old password still logs in"; exit 1; fi
echo rotated`
	pod := dbClient(ns, "rotation", e, script, []corev1.EnvVar{
		{Name: "USER_NAME", ValueFrom: secretEnv(secretName, database.UsernameKey)},
		{Name: "NEW_PASSWORD", ValueFrom: secretEnv(secretName, database.PasswordKey)},
		{Name: "OLD_PASSWORD", Value: oldPassword},
		{Name: "CA", ValueFrom: bindingEnv(db, "ca.crt")},
	})
	if _, err := suite.cs.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if phase := waitPodDone(t, ns, pod.Name, 2*time.Minute); phase != corev1.PodSucceeded {
		t.Fatalf("password rotation client ended %s:\n%s", phase, mustKubectl(t, "-n", ns, "logs", pod.Name))
	}
}

func secretEnv(name, key string) *corev1.EnvVarSource {
	return &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key}}
}

// serviceLeadsTo waits until the Service's ready endpoints are exactly the pods'.
func serviceLeadsTo(t *testing.T, ns, service string, pods ...string) {
	t.Helper()
	want := map[string]bool{}
	for _, name := range pods {
		p, err := suite.cs.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want[p.Status.PodIP] = true
	}
	testutil.Eventually(t, time.Minute, "Service "+service+" to lead to "+strings.Join(pods, ", "), func() error {
		slices, err := suite.cs.DiscoveryV1().EndpointSlices(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=" + service})
		if err != nil {
			return err
		}
		got := map[string]bool{}
		for _, sl := range slices.Items {
			for _, ep := range sl.Endpoints {
				if ep.Conditions.Ready != nil && *ep.Conditions.Ready {
					for _, a := range ep.Addresses {
						got[a] = true
					}
				}
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Errorf("ready endpoints %v, want %v", got, want)
		}
		return nil
	})
}
