package database

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/mooringhq/mooring/internal/dump/dumptest"
	"github.com/mooringhq/mooring/internal/localcluster"
)

// The credentials script runs for real here against a PostgreSQL server the test starts
// (as internal/dump tests its backup script), so that the quoting, the change and the
// silence about the password are proven rather than assumed. The server logs every
// statement, to prove the password stays out of its log too.

const (
	testSuperuserPassword = "superuser-Pa55"
	testOldPassword       = "old-Pa55word"
)

// A password with everything a quoting mistake would trip on: both quotes, a backslash,
// a dollar sign, a semicolon, spaces, a newline and a trailing newline.
const awkwardPassword = "n3w 'pa\"ss\\word' $HOME; --\nline two\n"

func TestCredentialsScriptAgainstPostgreSQL(t *testing.T) {
	pg := startPostgreSQL(t)
	pg.psql(t, `CREATE ROLE app LOGIN PASSWORD '`+testOldPassword+`'`)
	env := []string{
		"DB_ENGINE=postgresql", "DB_HOST=127.0.0.1", "DB_PORT=" + strconv.Itoa(pg.port),
		"ADMIN_USER=postgres", "PGPASSWORD=" + testSuperuserPassword,
		"APP_USERNAME=app", "APP_PASSWORD=" + awkwardPassword,
	}
	out, err := credentialsScript(pg.binDir, env).CombinedOutput()
	if err != nil {
		t.Fatalf("script failed: %v\n%s", err, out)
	}
	t.Logf("script output:\n%s", out)
	if !pg.canLogIn(t, "app", awkwardPassword) {
		t.Fatal("app cannot log in with the new password")
	}
	if pg.canLogIn(t, "app", testOldPassword) {
		t.Fatal("app still logs in with the old password")
	}
	// Run again with the same password: nothing to do, nothing fails.
	if out, err := credentialsScript(pg.binDir, env).CombinedOutput(); err != nil {
		t.Fatalf("second run failed: %v\n%s", err, out)
	}

	// A superuser password that is not the database's fails, and changes nothing.
	bad := append(env[:len(env):len(env)], "PGPASSWORD=wrong", "APP_PASSWORD=never-set")
	badOut, err := credentialsScript(pg.binDir, bad).CombinedOutput()
	if err == nil {
		t.Fatalf("the script succeeded with a wrong superuser password:\n%s", badOut)
	}
	if !strings.Contains(string(badOut), "could not change") {
		t.Errorf("failure output does not say what failed:\n%s", badOut)
	}
	if !pg.canLogIn(t, "app", awkwardPassword) {
		t.Fatal("a failed run changed the password")
	}
	// A user the database does not have is not created.
	missing := append(env[:len(env):len(env)], "APP_USERNAME=someone-else")
	missingOut, err := credentialsScript(pg.binDir, missing).CombinedOutput()
	if err == nil {
		t.Fatalf("the script succeeded for a user the database does not have:\n%s", missingOut)
	}

	for _, text := range []string{string(out), string(badOut), string(missingOut), pg.serverLog(t)} {
		for _, secret := range []string{"n3w", "never-set", testSuperuserPassword} {
			if strings.Contains(text, secret) {
				t.Errorf("a password fragment %q shows in the output or the server log:\n%s", secret, text)
			}
		}
	}
}

// No MySQL server here: a stand-in mysql client records what the script sends it, and
// checks the superuser password comes only through MYSQL_PWD, never among the arguments.
func TestCredentialsScriptMySQLStatements(t *testing.T) {
	bin := t.TempDir()
	log := filepath.Join(bin, "statements")
	fake := `#!/bin/sh
case "$*" in *"$MYSQL_PWD"*|*n3w*) echo "password on the command line" >&2; exit 3 ;; esac
[ "$MYSQL_PWD" = "` + testSuperuserPassword + `" ] || { echo "no MYSQL_PWD" >&2; exit 4; }
echo "-- args: $*" >>"` + log + `"
in=$(cat)
printf '%s\n' "$in" >>"` + log + `"
case "$in" in *"SELECT host"*) printf '%s\n' "$HOSTS" ;; esac
`
	if err := os.WriteFile(filepath.Join(bin, "mysql"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{
		"DB_ENGINE=mysql", "DB_HOST=inventory.shop.svc", "DB_PORT=3306", "ADMIN_USER=root",
		"MYSQL_PWD=" + testSuperuserPassword, "APP_USERNAME=o'app", "APP_PASSWORD=" + awkwardPassword,
		"HOSTS=%\nlocalhost",
	}
	out, err := credentialsScript(bin, env).CombinedOutput()
	if err != nil {
		t.Fatalf("script failed: %v\n%s", err, out)
	}
	sent, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	// The password as a MySQL literal under NO_BACKSLASH_ESCAPES: only ' doubled.
	lit := strings.ReplaceAll(awkwardPassword, "'", "''")
	for _, want := range []string{
		"--host=inventory.shop.svc --port=3306 --user=root --protocol=TCP",
		"NO_BACKSLASH_ESCAPES",
		"SELECT host FROM mysql.user WHERE user = 'o''app';",
		"ALTER USER 'o''app'@'%' IDENTIFIED BY '" + lit + "';",
		"ALTER USER 'o''app'@'localhost' IDENTIFIED BY '" + lit + "';",
	} {
		if !strings.Contains(string(sent), want) {
			t.Errorf("mysql was not sent %q; it got:\n%s", want, sent)
		}
	}
	if strings.Contains(string(out), "n3w") {
		t.Errorf("the script printed the password:\n%s", out)
	}
	// A user the database does not have: the script says so and changes nothing.
	noUser := append(env[:len(env)-1:len(env)-1], "HOSTS=")
	if out, err := credentialsScript(bin, noUser).CombinedOutput(); err == nil || !strings.Contains(string(out), "does not exist") {
		t.Errorf("for a missing user: %v\n%s", err, out)
	}
}

func credentialsScript(binDir string, env []string) *exec.Cmd {
	cmd := exec.Command("/bin/sh", "-c", CredentialsScript)
	cmd.Env = append([]string{"PATH=" + binDir + ":/usr/bin:/bin", "HOME=" + os.TempDir()}, env...)
	cmd.Dir = os.TempDir()
	return cmd
}

// postgres is a throwaway PostgreSQL server on a free local port: local socket
// connections are trusted (the test's own psql), TCP needs a password.
type postgres struct {
	binDir, root, socketDir string
	port                    int
	runAs                   []string // runuser prefix when the test runs as root
}

func startPostgreSQL(t *testing.T) *postgres {
	t.Helper()
	binDir := findPostgreSQL()
	if binDir == "" {
		t.Fatal("no PostgreSQL server binaries (initdb, postgres, pg_ctl, psql) in /usr/lib/postgresql/*/bin or on PATH: " +
			"install Debian's postgresql package (apt-get install -y postgresql); .ci/run does this in CI")
	}
	port, err := localcluster.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	root, err := os.MkdirTemp("", "mooring-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	pg := &postgres{binDir: binDir, root: root, socketDir: filepath.Join(root, "run"), port: port}
	if err := os.Mkdir(pg.socketDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("running as root, the server needs the postgres OS user (from Debian's postgresql package): %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		for _, d := range []string{root, pg.socketDir} {
			if err := os.Chown(d, uid, gid); err != nil {
				t.Fatal(err)
			}
		}
		pg.runAs = []string{"runuser", "-u", "postgres", "--"}
	}
	pwfile := filepath.Join(root, "pw")
	if err := os.WriteFile(pwfile, []byte(testSuperuserPassword+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(root, "data")
	pg.run(t, filepath.Join(binDir, "initdb"), "--pgdata", data, "--username", "postgres", "--pwfile", pwfile,
		"--auth-local", "trust", "--auth-host", "scram-sha-256", "--no-sync", "--encoding", "UTF8")
	opts := fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %d -k %s -c fsync=off -c log_statement=all -c log_min_error_statement=error",
		port, pg.socketDir)
	pg.run(t, filepath.Join(binDir, "pg_ctl"), "start", "--wait", "--timeout", "60", "--pgdata", data,
		"--log", filepath.Join(root, "server.log"), "-o", opts)
	t.Cleanup(func() {
		cmd := pg.command(filepath.Join(binDir, "pg_ctl"), "stop", "--mode", "immediate", "--pgdata", data)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Logf("stop PostgreSQL: %v\n%s", err, out)
		}
	})
	return pg
}

func (pg *postgres) command(name string, args ...string) *exec.Cmd {
	full := append(append(append([]string{}, pg.runAs...), name), args...)
	cmd := exec.Command(full[0], full[1:]...)
	cmd.Dir = os.TempDir() // the postgres user may not read the test's working directory
	return cmd
}

func (pg *postgres) run(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := pg.command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", filepath.Base(name), args, err, out)
	}
}

// psql runs SQL as the superuser over the server's Unix socket.
func (pg *postgres) psql(t *testing.T, sql string) {
	t.Helper()
	pg.run(t, filepath.Join(pg.binDir, "psql"), "--no-psqlrc", "--set", "ON_ERROR_STOP=1", "--host", pg.socketDir,
		"--port", strconv.Itoa(pg.port), "--username", "postgres", "--dbname", "postgres", "--command", sql)
}

// canLogIn tries a password over TCP, where the server asks for one.
func (pg *postgres) canLogIn(t *testing.T, user, password string) bool {
	t.Helper()
	cmd := exec.Command(filepath.Join(pg.binDir, "psql"), "--no-psqlrc", "--no-password", "--host=127.0.0.1",
		"--port="+strconv.Itoa(pg.port), "--username="+user, "--dbname=postgres", "--command=SELECT 1")
	cmd.Env = []string{"PGPASSWORD=" + password, "PGCONNECT_TIMEOUT=10"}
	out, err := cmd.CombinedOutput()
	if err != nil && !strings.Contains(string(out), "authentication failed") {
		t.Fatalf("log in as %s: %v\n%s", user, err, out)
	}
	return err == nil
}

func (pg *postgres) serverLog(t *testing.T) string {
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

// findPostgreSQL returns the newest /usr/lib/postgresql/<major>/bin with a server, or
// the directory of initdb on PATH.
func findPostgreSQL() string {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	major := func(dir string) int {
		n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
		return n
	}
	sort.Slice(dirs, func(i, j int) bool { return major(dirs[i]) > major(dirs[j]) })
	if p, err := exec.LookPath("initdb"); err == nil {
		dirs = append(dirs, filepath.Dir(p))
	}
	for _, d := range dirs {
		complete := true
		for _, b := range []string{"initdb", "postgres", "pg_ctl", "psql"} {
			if _, err := os.Stat(filepath.Join(d, b)); err != nil {
				complete = false
			}
		}
		if complete {
			return d
		}
	}
	return ""
}

// A stand-in mariadb client records what the script sends it (for machines without
// MariaDB): the MariaDB statements, through the mariadb client (recent MariaDB images
// have no mysql), the superuser password only through MYSQL_PWD.
func TestCredentialsScriptMariaDBStatements(t *testing.T) {
	bin := t.TempDir()
	log := filepath.Join(bin, "statements")
	fake := `#!/bin/sh
case "$*" in *"$MYSQL_PWD"*|*n3w*) echo "password on the command line" >&2; exit 3 ;; esac
[ "$MYSQL_PWD" = "` + testSuperuserPassword + `" ] || { echo "no MYSQL_PWD" >&2; exit 4; }
in=$(cat)
printf '%s\n' "$in" >>"` + log + `"
case "$in" in *"SELECT host"*) printf '%s\n' "$HOSTS" ;; esac
`
	if err := os.WriteFile(filepath.Join(bin, "mariadb"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	noMySQL := "#!/bin/sh\necho 'mysql called: a MariaDB image may not have it' >&2\nexit 9\n"
	if err := os.WriteFile(filepath.Join(bin, "mysql"), []byte(noMySQL), 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{
		"DB_ENGINE=mariadb", "DB_HOST=inventory.shop.svc", "DB_PORT=3306", "ADMIN_USER=root",
		"MYSQL_PWD=" + testSuperuserPassword, "APP_USERNAME=o'app", "APP_PASSWORD=" + awkwardPassword,
		"HOSTS=%\nlocalhost",
	}
	out, err := credentialsScript(bin, env).CombinedOutput()
	if err != nil {
		t.Fatalf("script failed: %v\n%s", err, out)
	}
	sent, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	lit := strings.ReplaceAll(awkwardPassword, "'", "''")
	for _, want := range []string{
		"NO_BACKSLASH_ESCAPES", "SET SESSION sql_log_off = ON;", "SET SESSION log_slow_query = OFF;",
		"SELECT host FROM mysql.user WHERE user = 'o''app' AND is_role = 'N';",
		"SET PASSWORD FOR 'o''app'@'%' = PASSWORD('" + lit + "');",
		"SET PASSWORD FOR 'o''app'@'localhost' = PASSWORD('" + lit + "');",
	} {
		if !strings.Contains(string(sent), want) {
			t.Errorf("mariadb was not sent %q; it got:\n%s", want, sent)
		}
	}
	if strings.Contains(string(sent), "ALTER USER") {
		t.Errorf("ALTER USER ... IDENTIFIED BY goes to MariaDB's binary log with the password as it is:\n%s", sent)
	}
}

// Against a real MariaDB server with its general, slow and binary logs on: the password
// changes, and shows in none of them, nor in the output. A role of the user's name is
// not taken for one of its hosts.
func TestCredentialsScriptAgainstMariaDB(t *testing.T) {
	m := dumptest.StartMariaDB(t, testSuperuserPassword)
	m.Exec(t, `CREATE USER 'app'@'%' IDENTIFIED BY '`+testOldPassword+`';
		CREATE USER 'app'@'localhost' IDENTIFIED BY '`+testOldPassword+`';
		CREATE ROLE app;`)
	env := []string{
		"DB_ENGINE=mariadb", "DB_HOST=127.0.0.1", "DB_PORT=" + strconv.Itoa(m.Port),
		"ADMIN_USER=root", "MYSQL_PWD=" + testSuperuserPassword,
		"APP_USERNAME=app", "APP_PASSWORD=" + awkwardPassword,
	}
	out, err := credentialsScript(m.BinDir, env).CombinedOutput()
	if err != nil {
		t.Fatalf("script failed: %v\n%s", err, out)
	}
	t.Logf("script output:\n%s", out)
	if !m.CanLogIn(t, "app", awkwardPassword) {
		t.Fatal("app cannot log in with the new password")
	}
	if m.CanLogIn(t, "app", testOldPassword) {
		t.Fatal("app still logs in with the old password")
	}
	if got := m.Exec(t, `SELECT count(DISTINCT authentication_string) FROM mysql.user WHERE user = 'app' AND is_role = 'N'`); got != "1\n" {
		t.Errorf("the user's hosts have %s distinct passwords, want one", got)
	}

	bad := append(env[:len(env):len(env)], "MYSQL_PWD=wrong", "APP_PASSWORD=never-set")
	badOut, err := credentialsScript(m.BinDir, bad).CombinedOutput()
	if err == nil || !strings.Contains(string(badOut), "could not change") {
		t.Fatalf("with a wrong superuser password: %v\n%s", err, badOut)
	}
	missing := append(env[:len(env):len(env)], "APP_USERNAME=someone-else")
	missingOut, err := credentialsScript(m.BinDir, missing).CombinedOutput()
	if err == nil || !strings.Contains(string(missingOut), "does not exist") {
		t.Fatalf("for a user the database does not have: %v\n%s", err, missingOut)
	}

	// The logs prove something only if they record statements: the test's own are there.
	m.Exec(t, "SELECT 'logged-statement'")
	logs := m.Logs(t)
	for _, want := range []string{"logged-statement", "SET PASSWORD FOR"} {
		if !bytes.Contains(logs, []byte(want)) {
			t.Fatalf("the server's logs lack %q, so they prove nothing", want)
		}
	}
	for _, text := range [][]byte{out, badOut, missingOut, logs} {
		for _, secret := range []string{"n3w", "never-set"} {
			if bytes.Contains(text, []byte(secret)) {
				t.Errorf("a password fragment %q shows in the output or the server's logs", secret)
			}
		}
	}
}
