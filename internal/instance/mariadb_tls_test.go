package instance

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// mariadbTLS runs sql over TCP on port as user, with the client options in opts (TLS),
// the password through MYSQL_PWD; it returns the rows, or the output with an error.
func mariadbTLS(client string, port int, user, password, sql string, opts ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	args := append([]string{"--no-defaults", "--protocol=tcp", "--host=127.0.0.1", "--port=" + strconv.Itoa(port),
		"--user=" + user, "--batch", "--skip-column-names", "--connect-timeout=5"}, opts...)
	cmd := exec.CommandContext(ctx, client, args...)
	cmd.Env = append(os.Environ(), "MYSQL_PWD="+password)
	cmd.Stdin = strings.NewReader(sql)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return strings.TrimSpace(stdout.String() + stderr.String()), err
	}
	return strings.TrimSpace(stdout.String()), nil
}

// binlogText is every binary log of a data directory as mariadb-binlog prints it, rows
// decoded.
func binlogText(t *testing.T, client, datadir string) string {
	t.Helper()
	tool := filepath.Join(filepath.Dir(client), "mariadb-binlog")
	files, _ := filepath.Glob(filepath.Join(datadir, "binlog.[0-9]*"))
	if len(files) == 0 {
		t.Fatalf("no binary log in %s", datadir)
	}
	out, err := exec.Command(tool, append([]string{"--verbose"}, files...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", tool, err, out)
	}
	return string(out)
}

// TestMariaDBTLSAndLeastPrivilege runs a MariaDB primary and replica with the cluster's
// certificates and a replication Secret of their own: the application user gets in over
// TLS with the server verified, plaintext TCP is refused, root's password alone is refused
// over the network and root with a client certificate named root is taken, the replica
// copies and streams over verified TLS as the replication user. The Secrets then change
// under the running servers: the new application password works on both instances and the
// old one no longer; the replica follows a new replication password without a restart.
// Last, the binary log of every instance holds none of the passwords.
func TestMariaDBTLSAndLeastPrivilege(t *testing.T) {
	client, series := mariadbOfMachine(t)
	u := serverUser(t, "mysql")
	self := selfCopy(t, u)
	const admin, appPassword, replPassword = "admin-pw-1", "app-pw-1", "repl-pw-1"
	adminDir := secretDir(t, u, map[string]string{"username": "root", "password": admin})
	appDir := secretDir(t, u, map[string]string{"username": "app", "password": appPassword})
	replDir := secretDir(t, u, map[string]string{"password": replPassword})
	certs := newTestTLS(t, u)
	base := ownedDir(t, u)
	ports := []int{freePort(t), freePort(t)}
	args := func(i int) []string {
		d := filepath.Join(base, "data-"+strconv.Itoa(i))
		for _, dir := range []string{d, d + "-run"} {
			if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(dir, u.uid, u.gid); err != nil {
				t.Fatal(err)
			}
		}
		a := []string{"--engine=mariadb", "--version=" + series, "--pod=db-" + strconv.Itoa(i), "--index=" + strconv.Itoa(i),
			"--port=" + strconv.Itoa(ports[i]), "--data-dir=" + d, "--run-dir=" + d + "-run",
			"--admin-secret-dir=" + adminDir, "--app-secret-dir=" + appDir, "--replication-secret-dir=" + replDir, "--tls-dir=" + certs.dir}
		if i > 0 {
			a = append(a, "--primary-host=127.0.0.1", "--primary-port="+strconv.Itoa(ports[0]))
		}
		return a
	}
	verify := []string{"--ssl", "--ssl-ca=" + certs.caFile, "--ssl-verify-server-cert"}

	p := startManager(t, self, u, args(0)...)
	p.waitReady(t, 2*time.Minute)
	if out, err := mariadbTLS(client, ports[0], "app", appPassword,
		"CREATE TABLE app.orders (id int PRIMARY KEY, item varchar(40)); INSERT INTO app.orders VALUES (1, 'rope'); SHOW STATUS LIKE 'Ssl_version';", verify...); err != nil || !strings.Contains(out, "TLSv1.") {
		t.Fatalf("the application user over verified TLS: %q (%v)", out, err)
	}
	if out, err := mariadbTLS(client, ports[0], "app", appPassword, "SELECT 1", "--skip-ssl"); err == nil {
		t.Fatalf("a plaintext connection was taken: %q", out)
	}
	if out, err := mariadbTLS(client, ports[0], "root", admin, "SELECT 1", verify...); err == nil {
		t.Fatalf("root logged in over the network with its password alone: %q", out)
	}
	cert, key := certs.client(t, "root")
	superuser := append(verify, "--ssl-cert="+cert, "--ssl-key="+key)
	if out, err := mariadbTLS(client, ports[0], "root", admin, "SELECT CURRENT_USER()", superuser...); err != nil || out != "root@%" {
		t.Fatalf("root with a client certificate of the cluster's CA: %q (%v)", out, err)
	}
	appCert, appKey := certs.client(t, "app")
	if out, err := mariadbTLS(client, ports[0], "root", admin, "SELECT 1", append(verify, "--ssl-cert="+appCert, "--ssl-key="+appKey)...); err == nil {
		t.Fatalf("root logged in with a client certificate named app: %q", out)
	}

	r := startManager(t, self, u, args(1)...)
	r.waitReady(t, 2*time.Minute)
	rows := func(port int, password, want string) {
		t.Helper()
		mariadbEventually(t, time.Minute, fmt.Sprintf("rows %s on port %d", want, port), func() error {
			out, err := mariadbTLS(client, port, "app", password, "SELECT GROUP_CONCAT(item ORDER BY id) FROM app.orders", verify...)
			if err != nil || out != want {
				return fmt.Errorf("answered %q (%w)", out, err)
			}
			return nil
		})
	}
	rows(ports[1], appPassword, "rope")
	replicaStatus := func() (map[string]string, error) {
		out, err := mariadbTLS(client, ports[1], "root", admin, "SHOW REPLICA STATUS", append(superuser, "--column-names")...)
		if err != nil {
			return nil, fmt.Errorf("%q (%w)", out, err)
		}
		lines := strings.Split(out, "\n")
		if len(lines) != 2 {
			return nil, fmt.Errorf("SHOW REPLICA STATUS: %q", out)
		}
		// The output was trimmed: trailing empty columns are gone.
		names, values := strings.Split(lines[0], "\t"), strings.Split(lines[1], "\t")
		row := map[string]string{}
		for i, n := range names {
			if i < len(values) {
				row[n] = values[i]
			}
		}
		return row, nil
	}
	st, err := replicaStatus()
	if err != nil || st["Master_SSL_Allowed"] != "Yes" || st["Master_SSL_Verify_Server_Cert"] != "Yes" || st["Master_User"] != ReplicationUser {
		t.Fatalf("the replica does not replicate as the replication user over verified TLS: %v (%v)", st, err)
	}

	rewriteSecret(t, u, appDir, "password", "app-pw-2")
	for _, port := range ports {
		rows(port, "app-pw-2", "rope")
		if out, err := mariadbTLS(client, port, "app", appPassword, "SELECT 1", verify...); err == nil {
			t.Errorf("the old application password still logs in on port %d: %q", port, out)
		}
	}
	rewriteSecret(t, u, replDir, "password", "repl-pw-2")
	mariadbEventually(t, time.Minute, "the replica to replicate with the new password", func() error {
		st, err := replicaStatus()
		if err != nil {
			return err
		}
		// The second change each manager applied.
		if strings.Count(p.log(), "applied the changed Secrets") < 2 || strings.Count(r.log(), "applied the changed Secrets") < 2 || st["Slave_IO_Running"] != "Yes" {
			return fmt.Errorf("a manager has not applied the change, or replication does not run: %v", st)
		}
		return nil
	})
	if out, err := mariadbTLS(client, ports[0], "app", "app-pw-2", "INSERT INTO app.orders VALUES (2, 'anchor')", verify...); err != nil {
		t.Fatalf("write: %q (%v)", out, err)
	}
	rows(ports[1], "app-pw-2", "rope,anchor")
	if out, err := mariadbTLS(client, ports[0], ReplicationUser, replPassword, "SELECT 1", verify...); err == nil {
		t.Errorf("the old replication password still logs in: %q", out)
	}

	for i := range ports {
		text := binlogText(t, client, filepath.Join(base, "data-"+strconv.Itoa(i), "mariadb"))
		for _, secret := range []string{admin, appPassword, replPassword, "app-pw-2", "repl-pw-2"} {
			if strings.Contains(text, secret) {
				t.Errorf("instance %d's binary log holds a password (%s)", i, secret)
			}
		}
		if !strings.Contains(text, "orders") {
			t.Errorf("instance %d's binary log does not have the application's writes: is it the right log?", i)
		}
	}
	for _, pr := range []*proc{p, r} {
		for _, secret := range []string{admin, appPassword, replPassword, "app-pw-2", "repl-pw-2"} {
			if strings.Contains(pr.log(), secret) {
				t.Errorf("a password (%s) is in the manager's or the server's log", secret)
			}
		}
	}
}
