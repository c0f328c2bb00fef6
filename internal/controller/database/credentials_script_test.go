package database

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mooringhq/mooring/internal/testutil/dbserver"
)

// The credentials script runs for real here against database servers the test starts:
// it succeeds only once the database takes the Secret's password (which the instance
// managers set), waits while it does not, and never shows the password.

const (
	testSuperuserPassword = "superuser-Pa55"
	testOldPassword       = "old-Pa55word"
)

// A password with everything a quoting mistake would trip on: both quotes, a backslash,
// a dollar sign, a semicolon, spaces, a newline and a trailing newline.
const awkwardPassword = "n3w 'pa\"ss\\word' $HOME; --\nline two\n"

func credentialsScript(binDir string, env []string) *exec.Cmd {
	cmd := exec.Command("/bin/sh", "-c", CredentialsScript)
	cmd.Env = append([]string{"PATH=" + binDir + ":/usr/bin:/bin", "HOME=" + os.TempDir()}, env...)
	cmd.Dir = os.TempDir()
	return cmd
}

// waitsFor runs the script, lets change give the database the new password once the
// script has begun trying, and requires the script to succeed after it.
func waitsFor(t *testing.T, cmd *exec.Cmd, change func()) []byte {
	t.Helper()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		t.Fatalf("the script ended (%v) before the database had the password:\n%s", err, out.String())
	case <-time.After(2 * time.Second): // it is trying; the proof is that it ends only after the change
	}
	change()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the script failed after the database took the password: %v\n%s", err, out.String())
		}
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		t.Fatalf("the script did not succeed within a minute of the change:\n%s", out.String())
	}
	return out.Bytes()
}

func TestCredentialsScriptAgainstPostgreSQL(t *testing.T) {
	pg := dbserver.StartPostgreSQL(t, testSuperuserPassword)
	pg.Psql(t, "postgres", `CREATE ROLE app LOGIN PASSWORD '`+testOldPassword+`'`)
	env := []string{"DB_ENGINE=postgresql", "DB_HOST=127.0.0.1", "DB_PORT=" + strconv.Itoa(pg.Port), "APP_USERNAME=app"}

	// The database has the Secret's password already: done at once.
	if out, err := credentialsScript(pg.BinDir, append(env, "APP_PASSWORD="+testOldPassword)).CombinedOutput(); err != nil {
		t.Fatalf("with the database's password: %v\n%s", err, out)
	}
	// It has not: the script keeps trying, then fails saying why, without the password.
	badOut, err := credentialsScript(pg.BinDir, append(env, "APP_PASSWORD=never-set", "WAIT_SECONDS=1")).CombinedOutput()
	if err == nil || !strings.Contains(string(badOut), "could not log in") {
		t.Fatalf("with a password the database does not have: %v\n%s", err, badOut)
	}
	// It waits until the database takes the new password.
	out := waitsFor(t, credentialsScript(pg.BinDir, append(env, "APP_PASSWORD="+awkwardPassword, "WAIT_SECONDS=60")), func() {
		pg.Psql(t, "postgres", `ALTER ROLE app PASSWORD '`+strings.ReplaceAll(awkwardPassword, "'", "''")+`'`)
	})
	for _, text := range []string{string(out), string(badOut)} {
		for _, secret := range []string{"n3w", "never-set", testOldPassword} {
			if strings.Contains(text, secret) {
				t.Errorf("a password fragment %q shows in the output:\n%s", secret, text)
			}
		}
	}
}

func TestCredentialsScriptAgainstMariaDB(t *testing.T) {
	m := dbserver.StartMariaDB(t, testSuperuserPassword)
	m.Exec(t, `CREATE USER 'app'@'%' IDENTIFIED BY '`+testOldPassword+`';`)
	env := []string{"DB_ENGINE=mariadb", "DB_HOST=127.0.0.1", "DB_PORT=" + strconv.Itoa(m.Port), "APP_USERNAME=app"}
	if out, err := credentialsScript(m.BinDir, append(env, "APP_PASSWORD="+testOldPassword)).CombinedOutput(); err != nil {
		t.Fatalf("with the database's password: %v\n%s", err, out)
	}
	badOut, err := credentialsScript(m.BinDir, append(env, "APP_PASSWORD=never-set", "WAIT_SECONDS=1")).CombinedOutput()
	if err == nil || !strings.Contains(string(badOut), "could not log in") {
		t.Fatalf("with a password the database does not have: %v\n%s", err, badOut)
	}
	out := waitsFor(t, credentialsScript(m.BinDir, append(env, "APP_PASSWORD="+awkwardPassword, "WAIT_SECONDS=60")), func() {
		m.Exec(t, `SET SESSION sql_mode = 'NO_BACKSLASH_ESCAPES'; ALTER USER 'app'@'%' IDENTIFIED BY '`+strings.ReplaceAll(awkwardPassword, "'", "''")+`';`)
	})
	for _, text := range [][]byte{out, badOut} {
		for _, secret := range []string{"n3w", "never-set", testOldPassword} {
			if bytes.Contains(text, []byte(secret)) {
				t.Errorf("a password fragment %q shows in the output:\n%s", secret, text)
			}
		}
	}
}

// Stand-in clients record their arguments: with a CA, each engine's client verifies the
// server's certificate and name, and the password is never an argument.
func TestCredentialsScriptVerifiesTheServer(t *testing.T) {
	for _, tc := range []struct{ engine, client, want string }{
		{"mysql", "mysql", "--ssl-ca=/etc/mooring/server-ca/ca.crt --ssl-mode=VERIFY_IDENTITY"},
		{"mariadb", "mariadb", "--ssl --ssl-ca=/etc/mooring/server-ca/ca.crt --ssl-verify-server-cert"},
		{"postgresql", "psql", "PGSSLMODE=verify-full PGSSLROOTCERT=/etc/mooring/server-ca/ca.crt"},
	} {
		t.Run(tc.engine, func(t *testing.T) {
			bin := t.TempDir()
			log := filepath.Join(bin, "args")
			fake := `#!/bin/sh
case "$*" in *n3w*) echo "password on the command line" >&2; exit 3 ;; esac
[ "${MYSQL_PWD:-$PGPASSWORD}" = "$APP_PASSWORD" ] || { echo "no password in the environment" >&2; exit 4; }
echo "$* PGSSLMODE=${PGSSLMODE:-} PGSSLROOTCERT=${PGSSLROOTCERT:-}" >>"` + log + `"
`
			if err := os.WriteFile(filepath.Join(bin, tc.client), []byte(fake), 0o755); err != nil {
				t.Fatal(err)
			}
			env := []string{"DB_ENGINE=" + tc.engine, "DB_HOST=inventory.shop.svc", "DB_PORT=3306",
				"DB_CA_FILE=/etc/mooring/server-ca/ca.crt", "APP_USERNAME=app", "APP_PASSWORD=" + awkwardPassword}
			out, err := credentialsScript(bin, env).CombinedOutput()
			if err != nil {
				t.Fatalf("script failed: %v\n%s", err, out)
			}
			args, _ := os.ReadFile(log)
			if !strings.Contains(string(args), tc.want) || !strings.Contains(string(args), "inventory.shop.svc") {
				t.Errorf("the client got %q, want %q", args, tc.want)
			}
		})
	}
}
