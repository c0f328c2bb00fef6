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

	"github.com/mooringhq/mooring/internal/testutil/dbserver"
)

// mariadbOfMachine is the MariaDB installed here (Debian's mariadb-server, as CI
// installs it), found where Debian puts it whatever the PATH, with its release series;
// a skip without one (a failure where CI asks for it: dbserver.RequireMariaDBEnv).
func mariadbOfMachine(t *testing.T) (client, series string) {
	t.Helper()
	m := dbserver.RequireMariaDB(t)
	out, err := exec.Command(m.Server, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("mariadbd --version: %v\n%s", err, out)
	}
	_, s, ok := parseServerVersion(string(out))
	if !ok {
		t.Fatalf("cannot read the version of %q", out)
	}
	return m.Client(), seriesString(s)
}

// mariadbEventually polls check until it succeeds or timeout passes.
func mariadbEventually(t *testing.T, timeout time.Duration, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s: %v", timeout, what, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// mariadbAs runs sql over TCP on port as user, the password through MYSQL_PWD (the
// client's environment, as the credentials Job's does), and returns the rows.
func mariadbAs(client string, port int, user, password, sql string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, client, "--no-defaults", "--protocol=tcp", "--host=127.0.0.1", "--port="+strconv.Itoa(port),
		"--user="+user, "--batch", "--skip-column-names", "--connect-timeout=5")
	cmd.Env = append(os.Environ(), "MYSQL_PWD="+password)
	cmd.Stdin = strings.NewReader(sql)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return strings.TrimSpace(stdout.String() + stderr.String()), err
	}
	// Standard error may have warnings (MariaDB 11's client about certificates).
	return strings.TrimSpace(stdout.String()), nil
}

// TestMariaDBPrimaryAndReplica runs the engine for real on the MariaDB of this machine,
// each instance a manager process of its own under the mysql OS user: the primary
// initialises with the Secrets' users (hostile passwords and user name), a replica copies
// it and replicates by GTID, /status tells the roles, the equal sequences and the
// streaming, a restarted replica resumes without a second copy, and both stop cleanly.
func TestMariaDBPrimaryAndReplica(t *testing.T) {
	client, series := mariadbOfMachine(t)
	u := serverUser(t, "mysql")
	self := selfCopy(t, u)
	const (
		admin       = `s3cret'"\:pw #;-- ç\`
		appUser     = "o'app"
		appPassword = "app'pa\"ss\\word\r\nline two\n"
	)
	adminDir := secretDir(t, u, map[string]string{"username": "root", "password": admin})
	appDir := secretDir(t, u, map[string]string{"username": appUser, "password": appPassword})
	base := ownedDir(t, u)
	primaryPort := freePort(t)
	args := func(i, port int) []string {
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
			"--port=" + strconv.Itoa(port), "--data-dir=" + d, "--run-dir=" + d + "-run",
			"--admin-secret-dir=" + adminDir, "--app-secret-dir=" + appDir}
		if i > 0 {
			a = append(a, "--primary-host=127.0.0.1", "--primary-port="+strconv.Itoa(primaryPort))
		}
		return a
	}

	p := startManager(t, self, u, args(0, primaryPort)...)
	p.waitReady(t, 2*time.Minute)
	if out, err := mariadbAs(client, primaryPort, appUser, appPassword,
		"CREATE TABLE app.orders (id int PRIMARY KEY, item varchar(40)); INSERT INTO app.orders VALUES (1, 'rope'), (2, 'anchor');"); err != nil {
		t.Fatalf("the application user cannot write on the primary: %v: %s", err, out)
	}
	if out, err := mariadbAs(client, primaryPort, appUser, "wrong", "SELECT 1"); err == nil {
		t.Fatalf("a wrong password logged in: %s", out)
	}
	if out, err := mariadbAs(client, primaryPort, "root", admin, "SELECT CURRENT_USER()"); err == nil {
		t.Fatalf("root logged in over TCP with the admin password (no spec.superuserAccess): %q", out)
	}
	if out, err := mariadbAs(client, primaryPort, appUser, appPassword, "SELECT COUNT(*) FROM mysql.user"); err == nil {
		t.Fatalf("the application user reads mysql.user: %s", out)
	}

	replicaPort := freePort(t)
	r := startManager(t, self, u, args(1, replicaPort)...)
	r.waitReady(t, 2*time.Minute)
	seeRows := func(want string) {
		t.Helper()
		mariadbEventually(t, time.Minute, "the replica to have the primary's rows "+want, func() error {
			out, err := mariadbAs(client, replicaPort, appUser, appPassword, "SELECT GROUP_CONCAT(item ORDER BY id) FROM app.orders")
			if err != nil || out != want {
				return fmt.Errorf("replica answered %q (%w), want %q", out, err, want)
			}
			return nil
		})
	}
	seeRows("rope,anchor")
	if out, err := mariadbAs(client, replicaPort, appUser, appPassword, "INSERT INTO app.orders VALUES (9, 'stowaway')"); err == nil {
		t.Fatalf("the replica accepted a write: %s", out)
	}
	caughtUp := func(r *proc) {
		t.Helper()
		mariadbEventually(t, time.Minute, "the replica to stream and catch up", func() error {
			ps, err := p.status()
			if err != nil {
				return err
			}
			rs, err := r.status()
			if err != nil {
				return err
			}
			if ps.Observation == nil || rs.Observation == nil {
				return fmt.Errorf("no observation: primary %+v replica %+v", ps, rs)
			}
			po, ro := ps.Observation, rs.Observation
			if po.Role != RolePrimary || ro.Role != RoleReplica || !ro.Streaming || ro.ReplicationError != "" {
				return fmt.Errorf("primary %+v, replica %+v: want roles primary and replica, the replica streaming without error", po, ro)
			}
			if po.Sequence == nil || ro.Sequence == nil || *po.Sequence != *ro.Sequence || *po.Sequence == 0 {
				return fmt.Errorf("positions primary %q replica %q, want equal sequences above 0", po.Position, ro.Position)
			}
			return nil
		})
	}
	caughtUp(r)

	// A restarted replica keeps its copy and resumes replication from its position.
	r.stop(t)
	if r.err != nil {
		t.Fatalf("the replica's manager exited with %v, want a clean stop", r.err)
	}
	if _, err := os.Stat(filepath.Join(base, "data-1", "mariadb", seededFile)); err != nil {
		t.Fatalf("the replica is not marked as copied: %v", err)
	}
	if _, err := mariadbAs(client, primaryPort, appUser, appPassword, "INSERT INTO app.orders VALUES (3, 'chain')"); err != nil {
		t.Fatalf("write on the primary: %v", err)
	}
	r2 := startManager(t, self, u, args(1, replicaPort)...)
	r2.waitReady(t, 2*time.Minute)
	seeRows("rope,anchor,chain")
	caughtUp(r2)
	if strings.Contains(r2.log(), "initialising") {
		t.Errorf("the restarted replica initialised again:\n%s", r2.log())
	}

	r2.stop(t)
	p.stop(t)
	if p.err != nil || r2.err != nil {
		t.Fatalf("managers exited with %v and %v, want clean stops", p.err, r2.err)
	}
	for _, pr := range []*proc{p, r, r2} {
		log := pr.log()
		if !strings.Contains(log, "Shutdown complete") {
			t.Errorf("the server did not shut down cleanly:\n%s", log)
		}
		for _, secret := range []string{admin, appPassword, "s3cret", "pa\"ss", "line two"} {
			if strings.Contains(log, secret) {
				t.Errorf("a password (%q) is in the manager's or the server's log:\n%s", secret, log)
			}
		}
	}
	for _, i := range []string{"0", "1"} {
		if _, err := os.Stat(filepath.Join(base, "data-"+i+"-run", "mysqld.pid")); err == nil {
			t.Errorf("instance %s left its pid file: the server did not stop cleanly", i)
		}
	}
}
