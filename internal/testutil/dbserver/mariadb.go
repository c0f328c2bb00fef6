package dbserver

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mooringhq/mooring/internal/localcluster"
)

// MariaDB is a throwaway MariaDB server on a free local port, with its general query log,
// slow query log and binary log on, so that a test can look for what must not be there.
type MariaDB struct {
	// Port is where it listens on 127.0.0.1; Socket is its Unix socket.
	Port   int
	Socket string
	// RootPassword is the password of root, for every host.
	RootPassword string
	// BinDir holds the clients (mariadb, mariadb-dump) for the scripts' PATH.
	BinDir string
	dir    string
}

// StartMariaDB initialises and starts a server owned by the test, with root's password
// rootPassword; the server stops when the test ends. Without a MariaDB server on the
// machine the test is skipped, or fails when RequireMariaDBEnv is set. As root the server
// runs as the "mysql" OS user the package creates, as mariadbd refuses to run as root.
func StartMariaDB(t testing.TB, rootPassword string) *MariaDB {
	t.Helper()
	install := RequireMariaDB(t)
	binDir, server := install.BinDir, install.Server
	port, err := localcluster.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "mooring-mariadb-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	var runAs []string
	if os.Geteuid() == 0 {
		u, err := user.Lookup("mysql")
		if err != nil {
			t.Fatalf("running as root, the server needs the mysql OS user (from Debian's mariadb-server package): %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
		runAs = []string{"--user=mysql"}
	}
	m := &MariaDB{Port: port, Socket: filepath.Join(dir, "mariadb.sock"), RootPassword: rootPassword, BinDir: binDir, dir: dir}
	data := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(binDir, "mariadb-install-db"), append([]string{"--no-defaults", "--datadir=" + data,
		"--auth-root-authentication-method=normal", "--skip-test-db"}, runAs...)...)
	initdb.Dir = dir
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("mariadb-install-db: %v\n%s", err, out)
	}
	args := append([]string{"--no-defaults", "--datadir=" + data, "--port=" + strconv.Itoa(port),
		"--bind-address=127.0.0.1", "--socket=" + m.Socket, "--pid-file=" + filepath.Join(dir, "mariadb.pid"),
		"--log-error=" + m.LogPath("error"), "--skip-name-resolve", "--innodb-buffer-pool-size=16M",
		"--general-log=ON", "--general-log-file=" + m.LogPath("general"),
		"--slow-query-log=ON", "--long-query-time=0", "--slow-query-log-file=" + m.LogPath("slow"),
		"--log-bin=" + filepath.Join(data, "binlog"), "--server-id=1", "--binlog-format=MIXED"}, runAs...)
	cmd := exec.Command(server, args...)
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		t.Fatalf("start mariadbd: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM) // mariadbd's signal to shut down
		// The server's exit status is not the test's business, only that it is gone.
		select {
		case <-exited: //nolint:errcheck // see above
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited //nolint:errcheck // see above
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		// A fresh data directory's root has no password over the socket.
		ping := exec.Command(filepath.Join(binDir, "mariadb"), "--no-defaults", "--socket="+m.Socket, "--user=root", "--execute=SELECT 1")
		ping.Env = []string{"HOME=" + dir}
		if ping.Run() == nil {
			break
		}
		select {
		case err := <-exited:
			log, _ := os.ReadFile(m.LogPath("error"))
			t.Fatalf("mariadbd exited: %v\n%s", err, log)
		default:
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(m.LogPath("error"))
			t.Fatalf("mariadbd did not accept connections within 60s:\n%s", log)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// root over the socket (the test's) and over TCP (the scripts'); the accounts for the
	// machine's host name are of no use under --skip-name-resolve.
	lit := strings.ReplaceAll(strings.ReplaceAll(rootPassword, `\`, `\\`), "'", "''")
	m.query(t, "", fmt.Sprintf("ALTER USER 'root'@'localhost' IDENTIFIED BY '%s'; ALTER USER 'root'@'127.0.0.1' IDENTIFIED BY '%s';", lit, lit))
	return m
}

// LogPath is the file of the server's "general", "slow" or "error" log.
func (m *MariaDB) LogPath(name string) string { return filepath.Join(m.dir, name+".log") }

// Logs are the server's general and slow query logs and its binary logs, concatenated:
// everything in which a statement the server ran may show.
func (m *MariaDB) Logs(t testing.TB) []byte {
	t.Helper()
	var all []byte
	files, _ := filepath.Glob(filepath.Join(m.dir, "data", "binlog.[0-9]*"))
	for _, f := range append([]string{m.LogPath("general"), m.LogPath("slow")}, files...) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, b...)
	}
	return all
}

// Exec runs SQL as root over the server's Unix socket and returns what it printed, tab
// separated, without column names.
func (m *MariaDB) Exec(t testing.TB, sql string) string {
	t.Helper()
	return m.query(t, m.RootPassword, sql)
}

func (m *MariaDB) query(t testing.TB, password, sql string) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(m.BinDir, "mariadb"), "--no-defaults", "--socket="+m.Socket, "--user=root",
		"--batch", "--skip-column-names")
	cmd.Env = []string{"HOME=" + m.dir}
	if password != "" {
		cmd.Env = append(cmd.Env, "MYSQL_PWD="+password)
	}
	cmd.Stdin = strings.NewReader(sql)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("mariadb: %v\n%s\nSQL:\n%s", err, errOut.String(), sql)
	}
	return out.String()
}

// CanLogIn tries user's password over TCP, as a Job would connect.
func (m *MariaDB) CanLogIn(t testing.TB, user, password string) bool {
	t.Helper()
	cmd := exec.Command(filepath.Join(m.BinDir, "mariadb"), "--no-defaults", "--host=127.0.0.1", "--port="+strconv.Itoa(m.Port),
		"--protocol=TCP", "--user="+user, "--execute=SELECT 1")
	cmd.Env = []string{"HOME=" + m.dir, "MYSQL_PWD=" + password}
	out, err := cmd.CombinedOutput()
	if err != nil && !strings.Contains(string(out), "Access denied") {
		t.Fatalf("log in as %s: %v\n%s", user, err, out)
	}
	return err == nil
}
