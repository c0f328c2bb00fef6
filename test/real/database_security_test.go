package real

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mooringhq/mooring/api/v1beta1"
	"github.com/mooringhq/mooring/internal/controller/database"
	"github.com/mooringhq/mooring/internal/testutil"
)

// bindingEnv is a key of the cluster's binding ConfigMap, as an App's binding has it.
func bindingEnv(db *v1beta1.DatabaseCluster, key string) *corev1.EnvVarSource {
	return &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: database.BindingConfigMapName(db)}, Key: key}}
}

// securityScript is what a client pod in the engine's image checks against the primary
// Service: the application user gets in with only the binding's files (its CA and mode,
// and the credentials), over TLS with the server verified; a plaintext connection is
// refused; the superuser with its password is refused unless superuserAccess allows it.
func securityScript(e dbEngine, host string, superuserAllowed bool) string {
	var verified, plaintext, superuser string
	switch e.engine {
	case v1beta1.PostgreSQL:
		verified = `PGSSLMODE="$SSLMODE" PGSSLROOTCERT=/tmp/ca.crt PGPASSWORD="$PW" psql --no-psqlrc -h ` + host + ` -U "$USER_NAME" -d postgres -tAc 'SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()'`
		plaintext = `PGSSLMODE=disable PGPASSWORD="$PW" psql --no-psqlrc -h ` + host + ` -U "$USER_NAME" -d postgres -tAc 'SELECT 1'`
		superuser = `PGSSLMODE=verify-full PGSSLROOTCERT=/tmp/ca.crt PGPASSWORD="$ADMIN" psql --no-psqlrc -h ` + host + ` -U postgres -d postgres -tAc 'SELECT 1'`
	default:
		verified = `[ "$SSLMODE" = VERIFY_IDENTITY ] && MYSQL_PWD="$PW" mariadb --ssl --ssl-ca=/tmp/ca.crt --ssl-verify-server-cert -h ` + host + ` -u "$USER_NAME" --skip-column-names -e "SHOW STATUS LIKE 'Ssl_version'"`
		plaintext = `MYSQL_PWD="$PW" mariadb --skip-ssl -h ` + host + ` -u "$USER_NAME" -e 'SELECT 1'`
		superuser = `MYSQL_PWD="$ADMIN" mariadb --ssl --ssl-ca=/tmp/ca.crt --ssl-verify-server-cert -h ` + host + ` -u root -e 'SELECT 1'`
	}
	su := `if ` + superuser + `; then echo "FAIL: the superuser logged in over the network with its password"; exit 1; fi`
	if superuserAllowed {
		su = superuser + ` || { echo "FAIL: the superuser was refused with superuserAccess"; exit 1; }`
	}
	return `set -u
printf '%s' "$CA" > /tmp/ca.crt
out=$(` + verified + `) || { echo "FAIL: the application user was refused over verified TLS"; exit 1; }
case "$out" in t|*TLS*) ;; *) echo "FAIL: not a TLS session: $out"; exit 1 ;; esac
if ` + plaintext + `; then echo "FAIL: a plaintext connection was taken"; exit 1; fi
` + su + `
echo checked`
}

func runSecurityClient(t *testing.T, e dbEngine, db *v1beta1.DatabaseCluster, name string, superuserAllowed bool) {
	t.Helper()
	ns := db.Namespace
	sslKey := map[v1beta1.DatabaseEngine]string{v1beta1.PostgreSQL: "sslmode", v1beta1.MariaDB: "ssl-mode"}[e.engine]
	pod := dbClient(ns, name, e, securityScript(e, db.Name+"."+ns+".svc", superuserAllowed), []corev1.EnvVar{
		{Name: "CA", ValueFrom: bindingEnv(db, "ca.crt")},
		{Name: "SSLMODE", ValueFrom: bindingEnv(db, sslKey)},
		{Name: "USER_NAME", ValueFrom: secretEnv(db.Spec.SecretName, database.UsernameKey)},
		{Name: "PW", ValueFrom: secretEnv(db.Spec.SecretName, database.PasswordKey)},
		{Name: "ADMIN", ValueFrom: secretEnv(database.AdminSecretName(db), database.PasswordKey)},
	})
	if _, err := suite.cs.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if phase := waitPodDone(t, ns, name, 2*time.Minute); phase != corev1.PodSucceeded {
		t.Fatalf("security client %s ended %s:\n%s", name, phase, mustKubectl(t, "-n", ns, "logs", name))
	}
}

// TestDatabaseSecurityForReal: for each engine, a primary and a replica on the real node.
// A client pod with only the binding's CA and mode and the credentials gets in over
// verified TLS; plaintext is refused; the superuser's password is refused from another
// pod, and taken once spec.superuserAccess is set. On MariaDB, no instance's binary log
// holds any of the cluster's passwords.
func TestDatabaseSecurityForReal(t *testing.T) {
	t.Parallel()
	for _, e := range []dbEngine{pgEngine, mariaEngine} {
		t.Run(string(e.engine), func(t *testing.T) {
			t.Parallel()
			db := createDatabase(t, e, "sec-"+string(e.engine), 2)
			waitReplicating(t, db, 6*time.Minute)
			db.Spec.SecretName = db.Name + "-credentials"
			runSecurityClient(t, e, db, "tls-client", false)
			if e.engine == v1beta1.MariaDB {
				e.mustSQL(t, db.Namespace, db.Name+"-0", "CREATE TABLE ledger (id int PRIMARY KEY); INSERT INTO ledger VALUES (1);")
				noPasswordInBinlogs(t, db, []string{db.Name + "-0", db.Name + "-1"})
			}

			patch := []byte(`{"spec":{"superuserAccess":true}}`)
			if err := suite.c.Patch(context.Background(), db, client.RawPatch(types.MergePatchType, patch)); err != nil {
				t.Fatal(err)
			}
			waitRolledOut(t, db, 5*time.Minute)
			runSecurityClient(t, e, db, "superuser-client", true)
		})
	}
}

// noPasswordInBinlogs reads every binary log of each pod with mariadb-binlog and fails on
// any of the cluster's passwords in them.
func noPasswordInBinlogs(t *testing.T, db *v1beta1.DatabaseCluster, pods []string) {
	t.Helper()
	var passwords []string
	for _, name := range []string{db.Spec.SecretName, database.AdminSecretName(db), database.ReplicationSecretName(db)} {
		s, err := suite.cs.CoreV1().Secrets(db.Namespace).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		passwords = append(passwords, string(s.Data[database.PasswordKey]))
	}
	for _, pod := range pods {
		out := mustKubectl(t, "-n", db.Namespace, "exec", pod, "-c", "database", "--", "sh", "-c",
			// Every binary log but an empty one, which the server has just opened and
			// mariadb-binlog refuses ("Failed reading header; probably an empty file").
			`for f in /var/lib/mooring/data/mariadb/binlog.[0-9]*; do if [ -s "$f" ]; then mariadb-binlog --verbose "$f" || exit 1; fi; done`)
		if !strings.Contains(out, "ledger") {
			t.Fatalf("%s's binary log has not the application's writes: is it the log? %d bytes", pod, len(out))
		}
		for i, p := range passwords {
			if strings.Contains(out, p) {
				t.Errorf("%s's binary log holds password %d of the cluster", pod, i)
			}
		}
	}
}

// waitRolledOut waits until the cluster's StatefulSet has rolled every pod onto its
// current template and the cluster replicates again.
func waitRolledOut(t *testing.T, db *v1beta1.DatabaseCluster, timeout time.Duration) {
	t.Helper()
	testutil.Eventually(t, timeout, db.Name+" rolled out with --superuser-access", func() error {
		sts, err := suite.cs.AppsV1().StatefulSets(db.Namespace).Get(context.Background(), db.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if sts.Status.ObservedGeneration < sts.Generation || sts.Status.UpdateRevision != sts.Status.CurrentRevision ||
			sts.Status.UpdatedReplicas != *sts.Spec.Replicas || sts.Status.ReadyReplicas != *sts.Spec.Replicas ||
			!strings.Contains(strings.Join(sts.Spec.Template.Spec.Containers[0].Command, " "), "--superuser-access") {
			return fmt.Errorf("StatefulSet status %+v, pods:\n%s", sts.Status, podSummary(db.Namespace))
		}
		return nil
	})
	waitReplicating(t, db, timeout)
}
