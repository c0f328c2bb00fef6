package instance

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files of the generated configuration")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./internal/instance -run %s -update writes it)", err, t.Name())
	}
	if got != string(want) {
		t.Errorf("%s differs from the generated one; got:\n%s", path, got)
	}
}

// The users of an instance, as statements, for each engine and access mode, against
// golden files: every statement in one session out of the binary log, the superuser over
// the network only as asked, the replication user with its own password and rights, the
// application user's password set again when it exists.
func TestMariaDBUsersSetup(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    *dialect
		u    users
	}{
		{"mariadb-tls", &mariadbDialect, users{admin: "pw-admin", replication: "pw-repl", appUser: "app", appPassword: "pw-app", tls: true}},
		{"mariadb-tls-superuser-access", &mariadbDialect, users{admin: "pw-admin", replication: "pw-repl", appUser: "app", appPassword: "pw-app", appExists: true, tls: true, superuserAccess: true}},
		{"mariadb-plaintext", &mariadbDialect, users{admin: "pw-admin", replication: "pw-repl", appUser: "app", appPassword: "pw-app", appExists: true}},
		{"mysql-tls", &mysqlDialect, users{admin: "pw-admin", replication: "pw-repl", appUser: "app", appPassword: "pw-app", tls: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.d.usersSetup(tc.u)
			golden(t, "users-"+tc.name+".sql", s.text())
			text := s.text()
			if !strings.HasPrefix(text, "SET SESSION sql_log_off = 1;\n") || strings.Index(text, "sql_log_bin = 0") > strings.Index(text, "pw-") {
				t.Errorf("a password comes before the session leaves the general and binary logs:\n%s", text)
			}
			for _, st := range s {
				for _, pw := range []string{"pw-admin", "pw-repl", "pw-app"} {
					if strings.Contains(st.sql, pw) && (st.shown == "" || strings.Contains(st.shown, pw)) {
						t.Errorf("statement %q would be shown as %q", st.sql, st.shown)
					}
				}
			}
		})
	}
	// Hostile names and passwords are quoted for NO_BACKSLASH_ESCAPES.
	text := mariadbDialect.usersSetup(users{admin: hostilePassword, replication: "r", appUser: "o'app`\\", appPassword: "x", tls: true}).text()
	if !strings.Contains(text, "ALTER USER 'root'@'%' IDENTIFIED BY 'p''a\"ss\\w`o#rd; -- $HOME\tç\\';\n") ||
		!strings.Contains(text, "CREATE USER 'o''app`\\'@'%' IDENTIFIED BY 'x';\n") {
		t.Errorf("hostile values quoted wrongly:\n%s", text)
	}
}

// pg_hba.conf for each mode, against golden files.
func TestPostgreSQLHBA(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		tls, superuserAccess bool
	}{
		{"tls", true, false}, {"tls-superuser-access", true, true}, {"plaintext", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			golden(t, "pg_hba-"+tc.name+".conf", pgHBA(tc.tls, tc.superuserAccess))
		})
	}
	f := Config{RunDir: "/run/mooring"}.tlsFiles()
	golden(t, "postgresql-tls.conf", strings.Join(pgTLSConf(f), "\n")+"\n")
	golden(t, "my-tls.cnf", strings.Join(mysqlTLSConf(f), "\n")+"\n")
}
