package dbserver

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"testing"
)

// Where Debian's packages put the servers, which is where Mooring's instance manager
// looks in a Debian-based image (internal/instance): postgresql-<major> under
// /usr/lib/postgresql/<major>/bin with nothing on PATH, mariadb-server's mariadbd in
// /usr/sbin and its clients in /usr/bin. These are looked at before PATH, so that a
// test passes on a plain Debian machine (PATH /usr/sbin:/usr/bin:/sbin:/bin, or without
// the sbin directories for a user who is not root) and not only where the machine's
// image links the server into /usr/local/bin. PATH is the last resort, for machines that
// install the servers elsewhere.
var (
	postgresLibGlob = "/usr/lib/postgresql/*/bin"
	mariadbDirs     = []string{"/usr/sbin", "/usr/bin"}
)

// Tools each server's tests need beside it.
var (
	postgresTools = []string{"initdb", "postgres", "pg_ctl", "pg_basebackup", "pg_isready", "pg_dump", "psql"}
	mariadbTools  = []string{"mariadbd", "mariadb", "mariadb-install-db", "mariadb-dump", "mariadb-admin"}
)

// PostgreSQLInstall is the PostgreSQL server of this machine.
type PostgreSQLInstall struct {
	// BinDir holds the server and its clients: /usr/lib/postgresql/<major>/bin on Debian.
	BinDir string
	// Major is the server's major version, as `postgres --version` tells it ("15").
	Major string
}

var pgVersionRE = regexp.MustCompile(`\(PostgreSQL\) (\d+)`)

// FindPostgreSQL returns the newest /usr/lib/postgresql/<major>/bin that holds a server
// and its clients, or else the directory of initdb on PATH if it does; ok is false when
// none does.
func FindPostgreSQL() (install PostgreSQLInstall, ok bool) {
	dirs, _ := filepath.Glob(postgresLibGlob)
	major := func(binDir string) int {
		n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
		return n
	}
	sort.Slice(dirs, func(i, j int) bool { return major(dirs[i]) > major(dirs[j]) })
	if p, err := exec.LookPath("initdb"); err == nil {
		if resolved, err := filepath.EvalSymlinks(p); err == nil {
			p = resolved
		}
		dirs = append(dirs, filepath.Dir(p))
	}
	for _, d := range dirs {
		if !hasAll(d, postgresTools) {
			continue
		}
		out, err := exec.Command(filepath.Join(d, "postgres"), "--version").Output()
		if m := pgVersionRE.FindSubmatch(out); err == nil && m != nil {
			return PostgreSQLInstall{BinDir: d, Major: string(m[1])}, true
		}
	}
	return PostgreSQLInstall{}, false
}

// RequirePostgreSQL is this machine's PostgreSQL server; without one the test fails,
// naming the package to install (CI installs it: .ci/run).
func RequirePostgreSQL(t testing.TB) PostgreSQLInstall {
	t.Helper()
	checkPath(t)
	install, ok := FindPostgreSQL()
	if !ok {
		t.Fatalf("no PostgreSQL server (%v) in %s or on PATH: install Debian's postgresql package (apt-get install -y postgresql); .ci/run does this in CI",
			postgresTools, postgresLibGlob)
	}
	return install
}

// MariaDBInstall is the MariaDB server of this machine.
type MariaDBInstall struct {
	// Server is mariadbd: /usr/sbin/mariadbd on Debian.
	Server string
	// BinDir holds the clients and mariadb-install-db: /usr/bin on Debian.
	BinDir string
}

// Client is the path of the mariadb client.
func (m MariaDBInstall) Client() string { return filepath.Join(m.BinDir, "mariadb") }

// FindMariaDB returns the MariaDB server and the directory of its clients, looked for in
// Debian's /usr/sbin and /usr/bin and then on PATH; ok is false when one of them is
// missing (Debian's mariadb-server package brings them all).
func FindMariaDB() (install MariaDBInstall, ok bool) {
	paths := map[string]string{}
	for _, name := range mariadbTools {
		p := findTool(name)
		if p == "" {
			return MariaDBInstall{}, false
		}
		paths[name] = p
	}
	binDir := filepath.Dir(paths["mariadb"])
	for _, name := range []string{"mariadb-install-db", "mariadb-dump", "mariadb-admin"} {
		if filepath.Dir(paths[name]) != binDir {
			return MariaDBInstall{}, false // the scripts' PATH is one directory of clients
		}
	}
	return MariaDBInstall{Server: paths["mariadbd"], BinDir: binDir}, true
}

// RequireMariaDBEnv is the variable that, when set, makes a machine without a MariaDB
// server fail the tests that need one instead of skipping them: for CI, once it installs
// the server.
const RequireMariaDBEnv = "MOORING_REQUIRE_MARIADB"

// RequireMariaDB is this machine's MariaDB server. Without one the test is skipped, or
// fails when RequireMariaDBEnv is set.
func RequireMariaDB(t testing.TB) MariaDBInstall {
	t.Helper()
	checkPath(t)
	install, ok := FindMariaDB()
	if !ok {
		msg := "no MariaDB server (" + filepath.Join(mariadbDirs[0], "mariadbd") + " and the clients " +
			"mariadb, mariadb-install-db, mariadb-dump, mariadb-admin in one directory): install Debian's mariadb-server package"
		if os.Getenv(RequireMariaDBEnv) != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return install
}

// findTool is name's path in Debian's MariaDB directories or on PATH, or "".
func findTool(name string) string {
	for _, d := range mariadbDirs {
		if p := filepath.Join(d, name); isExecutable(p) {
			return p
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	return ""
}

func hasAll(dir string, names []string) bool {
	for _, n := range names {
		if !isExecutable(filepath.Join(dir, n)) {
			return false
		}
	}
	return true
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}
