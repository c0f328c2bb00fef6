package dbserver

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mooringhq/mooring/internal/localcluster"
)

// PostgreSQL is a throwaway PostgreSQL server on a free local port. Connections over its
// Unix socket (the test's own psql) are trusted; over TCP, as a Job connects, a password
// is needed. It logs every statement, so that a test can look for what must not be there.
type PostgreSQL struct {
	// BinDir holds the server and its clients (psql, pg_dump) for the scripts' PATH.
	BinDir string
	// Port is where it listens on 127.0.0.1; SocketDir holds its Unix socket.
	Port      int
	SocketDir string
	// SuperuserPassword is the password of the superuser "postgres".
	SuperuserPassword string
	root, dataDir     string
	runAs             []string // runuser prefix when the test runs as root
}

// StartPostgreSQL initialises and starts a server owned by the test, whose superuser
// "postgres" has the password superuserPassword; the server stops when the test ends.
// initdb refuses to run as root, so as root the server runs as the "postgres" OS user
// Debian's package creates. A machine without the server fails the test: CI installs it.
func StartPostgreSQL(t testing.TB, superuserPassword string) *PostgreSQL {
	t.Helper()
	binDir := RequirePostgreSQL(t).BinDir
	port, err := localcluster.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	root, err := os.MkdirTemp("", "mooring-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	pg := &PostgreSQL{BinDir: binDir, Port: port, SocketDir: filepath.Join(root, "run"), SuperuserPassword: superuserPassword,
		root: root, dataDir: filepath.Join(root, "data")}
	if err := os.Mkdir(pg.SocketDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("running as root, the server needs the postgres OS user (from Debian's postgresql package): %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		for _, d := range []string{root, pg.SocketDir} {
			if err := os.Chown(d, uid, gid); err != nil {
				t.Fatal(err)
			}
		}
		pg.runAs = []string{"runuser", "-u", "postgres", "--"}
	}
	pwfile := filepath.Join(root, "pw")
	if err := os.WriteFile(pwfile, []byte(superuserPassword+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pg.Run(t, filepath.Join(binDir, "initdb"), "--pgdata", pg.dataDir, "--username", "postgres", "--pwfile", pwfile,
		"--auth-local", "trust", "--auth-host", "scram-sha-256", "--no-sync", "--encoding", "UTF8")
	opts := fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %d -k %s -c fsync=off -c log_statement=all -c log_min_error_statement=error",
		port, pg.SocketDir)
	pg.Run(t, filepath.Join(binDir, "pg_ctl"), "start", "--wait", "--timeout", "60", "--pgdata", pg.dataDir,
		"--log", filepath.Join(root, "server.log"), "-o", opts)
	t.Cleanup(func() {
		cmd := pg.Command(filepath.Join(binDir, "pg_ctl"), "stop", "--mode", "immediate", "--pgdata", pg.dataDir)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Logf("stop PostgreSQL: %v\n%s", err, out)
		}
	})
	return pg
}

// Command is name with args run as the server's OS user (when the test runs as root),
// from a directory that user can read.
func (pg *PostgreSQL) Command(name string, args ...string) *exec.Cmd {
	full := append(append(append([]string{}, pg.runAs...), name), args...)
	cmd := exec.Command(full[0], full[1:]...)
	cmd.Dir = os.TempDir() // the postgres user may not read the test's working directory
	return cmd
}

// Run runs Command(name, args...) and fails the test, with its output, if it fails.
func (pg *PostgreSQL) Run(t testing.TB, name string, args ...string) {
	t.Helper()
	if out, err := pg.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", filepath.Base(name), args, err, out)
	}
}

// Psql runs SQL in database db as the superuser over the server's Unix socket.
func (pg *PostgreSQL) Psql(t testing.TB, db, sql string) {
	t.Helper()
	pg.Run(t, filepath.Join(pg.BinDir, "psql"), "--no-psqlrc", "--set", "ON_ERROR_STOP=1", "--host", pg.SocketDir,
		"--port", strconv.Itoa(pg.Port), "--username", "postgres", "--dbname", db, "--command", sql)
}

// Query runs SQL in database db as the superuser over the server's Unix socket and returns
// the rows it printed, unaligned, one a line.
func (pg *PostgreSQL) Query(t testing.TB, db, sql string) string {
	t.Helper()
	out, err := pg.Command(filepath.Join(pg.BinDir, "psql"), "--no-psqlrc", "--set", "ON_ERROR_STOP=1", "--host", pg.SocketDir,
		"--port", strconv.Itoa(pg.Port), "--username", "postgres", "--dbname", db, "--tuples-only", "--no-align",
		"--command", sql).Output()
	if err != nil {
		t.Fatalf("psql %q: %v", sql, err)
	}
	return string(out)
}

// CanLogIn tries user's password over TCP, where the server asks for one, as a Job would
// connect.
func (pg *PostgreSQL) CanLogIn(t testing.TB, user, password string) bool {
	t.Helper()
	cmd := exec.Command(filepath.Join(pg.BinDir, "psql"), "--no-psqlrc", "--no-password", "--host=127.0.0.1",
		"--port="+strconv.Itoa(pg.Port), "--username="+user, "--dbname=postgres", "--command=SELECT 1")
	cmd.Env = []string{"PGPASSWORD=" + password, "PGCONNECT_TIMEOUT=10"}
	out, err := cmd.CombinedOutput()
	if err != nil && !strings.Contains(string(out), "authentication failed") {
		t.Fatalf("log in as %s: %v\n%s", user, err, out)
	}
	return err == nil
}

// ServerLog is the server's log, every statement it ran included. It fails the test when
// the log holds no statement at all (a CanLogIn runs one), as it would then prove nothing.
func (pg *PostgreSQL) ServerLog(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(pg.root, "server.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "statement: SELECT 1") {
		t.Fatalf("the server does not log statements, so the log proves nothing:\n%s", b)
	}
	return string(b)
}
