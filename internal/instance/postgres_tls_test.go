package instance

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestPostgreSQLTLSAndLeastPrivilege runs a primary and a replica with the cluster's
// certificates and a replication Secret of its own, as the pods run them: a client that
// verifies the server (verify-full, the binding's CA) gets in, plaintext TCP is refused,
// the superuser's password is refused over the network while its client certificate of
// the cluster's CA is taken, the replication user cannot log into a database, and the
// replica streams over verified TLS. Then the Secrets change under the running servers:
// the application's new password works on both instances and the old one no longer, and
// a new replication password is taken by the replica at its next connection, without a
// restart of either.
func TestPostgreSQLTLSAndLeastPrivilege(t *testing.T) {
	bin, major := pgBin(t)
	u := serverUser(t, "postgres")
	self := selfCopy(t, u)
	const admin, appPassword, replPassword = "admin-pw-1", "app-pw-1", "repl-pw-1"
	adminDir := secretDir(t, u, map[string]string{"username": "postgres", "password": admin})
	appDir := secretDir(t, u, map[string]string{"username": "app", "password": appPassword})
	replDir := secretDir(t, u, map[string]string{"password": replPassword})
	certs := newTestTLS(t, u)
	base := ownedDir(t, u)
	mk := func(i int) pgInstance {
		d := filepath.Join(base, "data-"+strconv.Itoa(i))
		for _, dir := range []string{d, d + "-run"} {
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(dir, u.uid, u.gid); err != nil {
				t.Fatal(err)
			}
		}
		return pgInstance{index: i, port: freePort(t), dataDir: d, adminSecret: adminDir, appSecret: appDir, replSecret: replDir, tlsDir: certs.dir}
	}
	primary, replica := mk(0), mk(1)
	p := startManager(t, self, u, primary.args(major, primary.port)...)
	p.waitReady(t, 2*time.Minute)

	verify := []string{"PGSSLMODE=verify-full", "PGSSLROOTCERT=" + certs.caFile}
	if out, err := psqlEnv(t, bin, primary.port, "app", appPassword,
		"CREATE TABLE orders (id int PRIMARY KEY, item text); INSERT INTO orders VALUES (1, 'rope'); SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid();", verify...); err != nil || !strings.HasSuffix(out, "\nt") {
		t.Fatalf("the application user over verify-full: %q (%v), want a TLS session", out, err)
	}
	if out, err := psqlEnv(t, bin, primary.port, "app", appPassword, "SELECT 1", "PGSSLMODE=disable"); err == nil || !strings.Contains(out, "no encryption") {
		t.Fatalf("a plaintext connection: %q (%v), want it refused for having no encryption", out, err)
	}
	if out, err := psqlEnv(t, bin, primary.port, "postgres", admin, "SELECT 1", verify...); err == nil {
		t.Fatalf("the superuser logged in over the network with its password: %q", out)
	}
	cert, key := certs.client(t, "postgres")
	if out, err := psqlEnv(t, bin, primary.port, "postgres", "", "SELECT current_user", append(verify, "PGSSLCERT="+cert, "PGSSLKEY="+key)...); err != nil || out != "postgres" {
		t.Fatalf("the superuser with a client certificate of the cluster's CA: %q (%v)", out, err)
	}
	appCert, appKey := certs.client(t, "app")
	if out, err := psqlEnv(t, bin, primary.port, "postgres", "", "SELECT 1", append(verify, "PGSSLCERT="+appCert, "PGSSLKEY="+appKey)...); err == nil {
		t.Fatalf("a client certificate named app logged in as the superuser: %q", out)
	}
	if out, err := psqlEnv(t, bin, primary.port, ReplicationUser, replPassword, "SELECT 1", verify...); err == nil {
		t.Fatalf("the replication user logged into a database: %q", out)
	}

	r := startManager(t, self, u, replica.args(major, primary.port)...)
	r.waitReady(t, 2*time.Minute)
	superuser := append(verify, "PGSSLCERT="+cert, "PGSSLKEY="+key)
	if out, err := psqlEnv(t, bin, primary.port, "postgres", "", "SELECT ssl FROM pg_stat_ssl JOIN pg_stat_replication USING (pid)", superuser...); err != nil || out != "t" {
		t.Fatalf("the replica's connection: %q (%v), want TLS", out, err)
	}
	rows := func(port int, want string) {
		t.Helper()
		eventually(t, time.Minute, fmt.Sprintf("rows %s on port %d", want, port), func() error {
			out, err := psqlEnv(t, bin, port, "app", "app-pw-2", "SELECT string_agg(item, ',' ORDER BY id) FROM orders", verify...)
			if err != nil || out != want {
				return fmt.Errorf("answered %q (%w)", out, err)
			}
			return nil
		})
	}

	// The application's password changes in its Secret: both instances take it.
	rewriteSecret(t, u, appDir, "password", "app-pw-2")
	for _, port := range []int{primary.port, replica.port} {
		rows(port, "rope")
		if out, err := psqlEnv(t, bin, port, "app", appPassword, "SELECT 1", verify...); err == nil {
			t.Errorf("the old application password still logs in on port %d: %q", port, out)
		}
	}

	// A new replication password: the replica reconnects with it once the primary ends
	// its connection, and streams what is written after.
	hash := func() string {
		t.Helper()
		out, err := psqlEnv(t, bin, primary.port, "postgres", "", "SELECT rolpassword FROM pg_authid WHERE rolname = 'replicator'", superuser...)
		if err != nil {
			t.Fatalf("read the replication user's password hash: %q (%v)", out, err)
		}
		return out
	}
	before := hash()
	rewriteSecret(t, u, replDir, "password", "repl-pw-2")
	eventually(t, time.Minute, "the primary to take the new replication password", func() error {
		if hash() == before {
			return fmt.Errorf("the replication user's password is unchanged")
		}
		return nil
	})
	// The replica's password file is rewritten at its own next look (2 s): wait for it
	// before ending the connection, so that the reconnection is the proof.
	eventually(t, 30*time.Second, "the replica's password file to hold the new password", func() error {
		b, err := os.ReadFile(filepath.Join(replica.dataDir+"-run", "pgpass"))
		if err != nil || !strings.Contains(string(b), "repl-pw-2") {
			return fmt.Errorf("pgpass: %w", err)
		}
		return nil
	})
	if out, err := psqlEnv(t, bin, primary.port, "postgres", "", "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_replication WHERE pid IS NOT NULL; INSERT INTO orders VALUES (2, 'anchor');", superuser...); err != nil {
		t.Fatalf("end the replica's connection: %q (%v)", out, err)
	}
	rows(replica.port, "rope,anchor")
	for _, pr := range []*proc{p, r} {
		for _, secret := range []string{admin, appPassword, replPassword, "app-pw-2", "repl-pw-2"} {
			if strings.Contains(pr.log(), secret) {
				t.Errorf("a password (%s) is in the manager's or the server's log:\n%s", secret, pr.log())
			}
		}
	}
	if !strings.Contains(r.log(), "applied the changed Secrets") {
		t.Errorf("the replica's manager did not say it applied the changed Secrets:\n%s", r.log())
	}
}
