package database

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mooringhq/mooring/internal/testutil/dbserver"
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
	pg := dbserver.StartPostgreSQL(t, testSuperuserPassword)
	pg.Psql(t, "postgres", `CREATE ROLE app LOGIN PASSWORD '`+testOldPassword+`'`)
	env := []string{
		"DB_ENGINE=postgresql", "DB_HOST=127.0.0.1", "DB_PORT=" + strconv.Itoa(pg.Port),
		"ADMIN_USER=postgres", "PGPASSWORD=" + testSuperuserPassword,
		"APP_USERNAME=app", "APP_PASSWORD=" + awkwardPassword,
	}
	out, err := credentialsScript(pg.BinDir, env).CombinedOutput()
	if err != nil {
		t.Fatalf("script failed: %v\n%s", err, out)
	}
	t.Logf("script output:\n%s", out)
	if !pg.CanLogIn(t, "app", awkwardPassword) {
		t.Fatal("app cannot log in with the new password")
	}
	if pg.CanLogIn(t, "app", testOldPassword) {
		t.Fatal("app still logs in with the old password")
	}
	// Run again with the same password: nothing to do, nothing fails.
	if out, err := credentialsScript(pg.BinDir, env).CombinedOutput(); err != nil {
		t.Fatalf("second run failed: %v\n%s", err, out)
	}

	// A superuser password that is not the database's fails, and changes nothing.
	bad := append(env[:len(env):len(env)], "PGPASSWORD=wrong", "APP_PASSWORD=never-set")
	badOut, err := credentialsScript(pg.BinDir, bad).CombinedOutput()
	if err == nil {
		t.Fatalf("the script succeeded with a wrong superuser password:\n%s", badOut)
	}
	if !strings.Contains(string(badOut), "could not change") {
		t.Errorf("failure output does not say what failed:\n%s", badOut)
	}
	if !pg.CanLogIn(t, "app", awkwardPassword) {
		t.Fatal("a failed run changed the password")
	}
	// A user the database does not have is not created.
	missing := append(env[:len(env):len(env)], "APP_USERNAME=someone-else")
	missingOut, err := credentialsScript(pg.BinDir, missing).CombinedOutput()
	if err == nil {
		t.Fatalf("the script succeeded for a user the database does not have:\n%s", missingOut)
	}

	for _, text := range []string{string(out), string(badOut), string(missingOut), pg.ServerLog(t)} {
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
	m := dbserver.StartMariaDB(t, testSuperuserPassword)
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
