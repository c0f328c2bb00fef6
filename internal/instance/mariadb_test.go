package instance

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// hostilePassword has what a quoting mistake trips on: both quotes, backslashes (one
// last), a backtick, #, ;, --, $, spaces, a tab and non-ASCII letters.
const hostilePassword = "p'a\"ss\\w`o#rd; -- $HOME\tç\\"

func testMariaDB(t *testing.T, engine string, index int) *mariadb {
	t.Helper()
	root := t.TempDir()
	c := Config{Engine: engine, Version: "11.8", Pod: "db-0", Index: index, PrimaryHost: "db-0.db-headless", Port: 3306, PrimaryPort: 3307,
		DataDir: filepath.Join(root, "data"), RunDir: filepath.Join(root, "run"),
		AdminSecretDir: filepath.Join(root, "admin"), AppSecretDir: filepath.Join(root, "app"), ReplicationSecretDir: filepath.Join(root, "replication")}
	if engine == "mysql" {
		c.Version = "8.4"
	}
	for _, d := range []string{c.DataDir, c.RunDir, c.AdminSecretDir, c.AppSecretDir, c.ReplicationSecretDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return newMariaDB(c)
}

func TestMariaDBServerConf(t *testing.T) {
	for _, tc := range []struct {
		engine     string
		index      int
		want, dont []string
	}{
		{"mariadb", 0,
			[]string{"[mysqld]\n", "/data/mariadb\n", "/run/mysqld.sock\n", "pid-file = ", "port = 3306\n", "bind-address = *\n", "skip-name-resolve\n",
				"server_id = 1\n", "log_bin = binlog\n", "binlog_format = ROW\n", "log_slave_updates = ON\n", "gtid_strict_mode = ON\n",
				"read_only = OFF\n", "innodb_buffer_pool_size = 64M\n", "skip_slave_start = ON\n"},
			[]string{"gtid_mode", "log_error =", "read_only = ON", "mysqlx"}},
		{"mariadb", 2,
			[]string{"server_id = 3\n", "read_only = ON\n", "port = 3306\n"},
			[]string{"read_only = OFF", "3307"}},
		{"mysql", 1,
			[]string{"/data/mysql\n", "server_id = 2\n", "gtid_mode = ON\n", "enforce_gtid_consistency = ON\n", "log_replica_updates = ON\n",
				"read_only = ON\n", "mysqlx = OFF\n", "skip_replica_start = ON\n"},
			[]string{"gtid_strict_mode", "log_slave_updates", "log_error ="}},
	} {
		m := testMariaDB(t, tc.engine, tc.index)
		conf := m.serverConf()
		for _, w := range tc.want {
			if !strings.Contains(conf, w) {
				t.Errorf("%s index %d: my.cnf lacks %q:\n%s", tc.engine, tc.index, w, conf)
			}
		}
		for _, d := range tc.dont {
			if strings.Contains(conf, d) {
				t.Errorf("%s index %d: my.cnf has %q:\n%s", tc.engine, tc.index, d, conf)
			}
		}
	}
}

func writeSecrets(t *testing.T, m *mariadb, admin, appUser, appPassword string) {
	t.Helper()
	for path, v := range map[string]string{
		filepath.Join(m.cfg.ReplicationSecretDir, "password"): hostilePassword,
		filepath.Join(m.cfg.AdminSecretDir, "password"):       admin,
		filepath.Join(m.cfg.AppSecretDir, "username"):         appUser,
		filepath.Join(m.cfg.AppSecretDir, "password"):         appPassword,
	} {
		if err := os.WriteFile(path, []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// The option files: the replica's has the primary, the replication user and its
// password, and with TLS the CA it verifies the primary with; every file is private; the
// MariaDB local administrator has no password at all.
func TestMariaDBClientConf(t *testing.T) {
	if _, err := localAdminName(); err != nil {
		t.Skip(err)
	}
	m := testMariaDB(t, "mariadb", 1)
	m.cfg.TLSDir = "/etc/mooring/tls"
	writeSecrets(t, m, "admin-pw", "app", "x")
	if err := m.writeClientConf(); err != nil {
		t.Fatal(err)
	}
	local, _ := os.ReadFile(m.localConfFile())
	if strings.Contains(string(local), "password") {
		t.Errorf("MariaDB's local option file has a password:\n%s", local)
	}
	primary, err := os.ReadFile(m.primaryConfFile())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`host = "db-0.db-headless"`, `port = "3307"`, `user = "replicator"`, `protocol = "tcp"`,
		"password = " + optionValue(hostilePassword), `ssl-ca = "` + m.cfg.tlsFiles().ca + `"`, `ssl-verify-server-cert = "1"`} {
		if !strings.Contains(string(primary), want) {
			t.Errorf("primary.cnf lacks %q:\n%s", want, primary)
		}
	}
	for _, f := range []string{m.localConfFile(), m.primaryConfFile()} {
		if fi, err := os.Stat(f); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, mode %v, want 0600", f, err, fi.Mode())
		}
	}

	my := testMariaDB(t, "mysql", 0)
	writeSecrets(t, my, "admin-pw", "app", "x")
	if err := my.writeClientConf(); err != nil {
		t.Fatal(err)
	}
	local, _ = os.ReadFile(my.localConfFile())
	insecure, _ := os.ReadFile(my.insecureConfFile())
	if !strings.Contains(string(local), `password = "admin-pw"`) || !strings.Contains(string(local), `user = "root"`) {
		t.Errorf("MySQL's local option file is not root's with the admin password:\n%s", local)
	}
	if strings.Contains(string(insecure), "password") {
		t.Errorf("MySQL's no-password option file has a password:\n%s", insecure)
	}
	if _, err := os.Stat(my.primaryConfFile()); err == nil {
		t.Error("the primary has an option file for a primary of its own")
	}
}

// optionValue is read back as written by the servers' own option-file reader, when this
// machine has it (my_print_defaults, from MariaDB's or MySQL's packages).
func TestOptionValue(t *testing.T) {
	if got, want := optionValue("a\"b'c\\d\ne#"), `"a\"b\'c\\d\ne#"`; got != want {
		t.Errorf("optionValue = %s, want %s", got, want)
	}
	printer, err := exec.LookPath("my_print_defaults")
	if err != nil {
		t.Skip("no my_print_defaults on this machine to read the values back")
	}
	for _, pw := range []string{hostilePassword, "#start", "end#", " spaced ", `"`, `'`, `\`, "two\nlines\n", "a\\nb", "cr\r\nlf", "ünï ©ode"} {
		f := filepath.Join(t.TempDir(), "c.cnf")
		if err := os.WriteFile(f, []byte(clientConf(map[string]string{"password": pw})), 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(printer, "--defaults-file="+f, "client").Output()
		if err == nil && strings.Contains(string(out), "*****") { // MySQL's masks passwords without --show
			out, err = exec.Command(printer, "--defaults-file="+f, "--show", "client").Output()
		}
		if err != nil {
			t.Fatalf("my_print_defaults: %v", err)
		}
		if got, want := string(out), "--password="+pw+"\n"; got != want {
			t.Errorf("password %q was read back as %q", pw, got)
		}
	}
}

func TestParseServerVersion(t *testing.T) {
	for out, want := range map[string]string{
		"/usr/sbin/mariadbd  Ver 10.11.19-MariaDB-0+deb12u1 for debian-linux-gnu on x86_64 (Debian 12)":         "10.11.19 10.11",
		"mariadbd  Ver 11.8.2-MariaDB-ubu2404 for debian-linux-gnu on x86_64 (mariadb.org binary distribution)": "11.8.2 11.8",
		"/usr/sbin/mysqld  Ver 8.4.3 for Linux on x86_64 (MySQL Community Server - GPL)":                        "8.4.3 8.4",
	} {
		v, s, ok := parseServerVersion(out)
		if got := v + " " + seriesString(s); !ok || got != want {
			t.Errorf("parseServerVersion(%q) = %q %v, want %q", out, got, ok, want)
		}
	}
	if _, _, ok := parseServerVersion("mariadbd: command not found"); ok {
		t.Error("a version was read from an error")
	}
	for in, want := range map[string]string{"11.8": "11.8", "8.4.3": "8.4", "10.11.19-MariaDB": "10.11", "18": "18", "11.8-log": "11.8"} {
		if s, ok := parseSeries(in); !ok || seriesString(s) != want {
			t.Errorf("parseSeries(%q) = %v %v, want %s", in, s, ok, want)
		}
	}
	if _, ok := parseSeries("latest"); ok {
		t.Error(`parseSeries("latest") succeeded`)
	}
}

// The data directory's version against the binaries': same series passes, a newer or
// older one is refused with what to do (MySQL's 8.0 to 8.4 passes, as admission lets
// it), and the directory is left as it is.
func TestMariaDBDataVersion(t *testing.T) {
	for _, tc := range []struct {
		d          *dialect
		file, data string
		bin        []int
		want       string // "" passes, else in the fault
	}{
		{&mariadbDialect, "mariadb_upgrade_info", "11.8.2-MariaDB", []int{11, 8}, ""},
		{&mariadbDialect, "mysql_upgrade_info", "10.11.19-MariaDB\x00", []int{10, 11}, ""},
		{&mariadbDialect, "mariadb_upgrade_info", "11.8.2-MariaDB", []int{11, 4}, "set spec.version back to 11.8"},
		{&mariadbDialect, "mysql_upgrade_info", "10.11.19-MariaDB", []int{11, 8}, "mariadb-upgrade, which Mooring does not run"},
		{&mariadbDialect, "", "", []int{11, 8}, ""},
		{&mysqlDialect, "mysql_upgrade_info", "8.0.40", []int{8, 4}, ""},
		{&mysqlDialect, "mysql_upgrade_info", "8.4.3", []int{8, 0}, "set spec.version back to 8.4"},
		{&mysqlDialect, "mysql_upgrade_info", "5.7.44", []int{8, 4}, "from one LTS series to the next"},
	} {
		dir := t.TempDir()
		if tc.file != "" {
			if err := os.WriteFile(filepath.Join(dir, tc.file), []byte(tc.data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		err := tc.d.checkDataVersion(dir, tc.bin)
		var f *Fault
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s data %q, binaries %v: %v, want none", tc.d.name, tc.data, tc.bin, err)
		case tc.want != "" && (!errors.As(err, &f) || f.Reason != FaultVersionMismatch || !strings.Contains(f.Message, tc.want)):
			t.Errorf("%s data %q, binaries %v: %v, want a VersionMismatch saying %q", tc.d.name, tc.data, tc.bin, err, tc.want)
		}
		if tc.want != "" && !strings.Contains(err.Error(), "left as it is") {
			t.Errorf("the fault does not say the data is left alone: %v", err)
		}
	}
}

// fakeServer writes a directory of stand-in binaries; the server prints version.
func fakeServer(t *testing.T, d *dialect, version string, skip ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, n := range []string{d.server, d.client, d.dump, d.admin, d.install} {
		if n == "" || slices.Contains(skip, n) {
			continue
		}
		script := "#!/bin/sh\nexit 0\n"
		if n == d.server {
			script = "#!/bin/sh\necho \"" + n + "  Ver " + version + " for Linux on x86_64\"\n"
		}
		if err := os.WriteFile(filepath.Join(dir, n), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// Check with stand-in binaries: what is missing and where it was looked for; the image's
// series against spec.version's; a foreign volume; a newer data directory left alone.
func TestMariaDBCheck(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	ctx := context.Background()
	expectFault := func(m *mariadb, reason string, says ...string) {
		t.Helper()
		err := m.Check(ctx)
		var f *Fault
		if !errors.As(err, &f) || f.Reason != reason {
			t.Fatalf("%s Check: %v, want a %s fault", m.d.name, err, reason)
		}
		for _, s := range says {
			if !strings.Contains(f.Message, s) {
				t.Errorf("the fault does not say %q: %s", s, f.Message)
			}
		}
	}

	m := testMariaDB(t, "mariadb", 0)
	m.searchDirs = []string{fakeServer(t, m.d, "11.8.2-MariaDB", "mariadb-install-db", "mariadb-dump")}
	expectFault(m, FaultMissingBinaries, "mariadb-dump, mariadb-install-db", m.searchDirs[0], "PATH", "docker.io/library/mariadb:11.8")

	m.searchDirs = []string{fakeServer(t, m.d, "11.4.5-MariaDB")}
	expectFault(m, FaultVersionMismatch, "runs MariaDB 11.4.5", "spec.version is 11.8")

	m.searchDirs = []string{fakeServer(t, m.d, "11.8.2-MariaDB")}
	if err := m.Check(ctx); err != nil {
		t.Fatalf("Check on an empty volume: %v", err)
	}
	if err := os.Mkdir(filepath.Join(m.cfg.DataDir, "data"), 0o700); err != nil { // Bitnami's
		t.Fatal(err)
	}
	expectFault(m, FaultUnknownData, "data")
	if err := os.Remove(filepath.Join(m.cfg.DataDir, "data")); err != nil {
		t.Fatal(err)
	}

	if err := os.MkdirAll(filepath.Join(m.datadir(), "mysql"), 0o700); err != nil {
		t.Fatal(err)
	}
	info := filepath.Join(m.datadir(), "mariadb_upgrade_info")
	if err := os.WriteFile(info, []byte("12.0.1-MariaDB"), 0o644); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadDir(m.datadir())
	expectFault(m, FaultVersionMismatch, "written by MariaDB 12.0", "this image runs MariaDB 11.8")
	after, _ := os.ReadDir(m.datadir())
	if len(before) != len(after) {
		t.Errorf("Check changed the data directory: %v, then %v", before, after)
	}
	if b, _ := os.ReadFile(info); string(b) != "12.0.1-MariaDB" {
		t.Errorf("Check changed the upgrade file: %q", b)
	}

	my := testMariaDB(t, "mysql", 0)
	my.searchDirs = []string{fakeServer(t, my.d, "8.4.3", "mysqladmin")}
	expectFault(my, FaultMissingBinaries, "MySQL mysqladmin", "docker.io/library/mysql:8.4")
	my.searchDirs = []string{fakeServer(t, my.d, "8.4.3")}
	if err := my.Check(ctx); err != nil {
		t.Fatalf("MySQL Check: %v", err)
	}
	if my.tool("mysqld") != filepath.Join(my.searchDirs[0], "mysqld") {
		t.Errorf("mysqld found at %q", my.tool("mysqld"))
	}
}

func TestMariaDBSequence(t *testing.T) {
	for pos, want := range map[string]int64{"": 0, "0-1-42": 42, "0-1-42,1-3-7": 42, "1-3-7": 0, "0-2-100, 5-1-900": 100} {
		if n, ok := mariadbSequence(pos); !ok || n != want {
			t.Errorf("mariadbSequence(%q) = %d %v, want %d", pos, n, ok, want)
		}
	}
	for _, bad := range []string{"0-1", "0-1-x", "garbage"} {
		if _, ok := mariadbSequence(bad); ok {
			t.Errorf("mariadbSequence(%q) succeeded", bad)
		}
	}
	const a, b = "3e11fa47-71ca-11e1-9e33-c80aa9429562", "0e2d5f3a-1111-11ef-8000-000000000002"
	for _, tc := range []struct {
		set, uuid string
		want      int64
		ok        bool
	}{
		{a + ":1-5", a, 5, true},
		{a + ":1-5:7-9," + b + ":1-300", a, 9, true},
		{b + ":1-300," + a + ":1-5:11", a, 11, true},
		{a + ":1-5:tag1:1-400", a, 5, true},
		{b + ":1-300", a, 0, true},
		{"", a, 0, true},
		{a + ":1-5", "", 0, false},
		{strings.ToUpper(a) + ":1-8", a, 8, true},
	} {
		if n, ok := mysqlSequence(tc.set, tc.uuid); ok != tc.ok || n != tc.want {
			t.Errorf("mysqlSequence(%q, %q) = %d %v, want %d %v", tc.set, tc.uuid, n, ok, tc.want, tc.ok)
		}
	}
}

func TestMariaDBReplicationStatements(t *testing.T) {
	lit := "'" + strings.ReplaceAll(hostilePassword, "'", "''") + "'"
	src := replicationSource{host: "db-0.db-headless", port: 3306, password: hostilePassword}
	ma := mariadbDialect.changeSource(src, true)
	if want := "CHANGE MASTER TO MASTER_HOST = 'db-0.db-headless', MASTER_PORT = 3306, MASTER_USER = 'replicator', MASTER_PASSWORD = " + lit +
		", MASTER_USE_GTID = slave_pos, MASTER_CONNECT_RETRY = 5;\nSTART REPLICA;\n"; !strings.HasSuffix(ma.text(), want) {
		t.Errorf("MariaDB replication:\n%s\nwant it to end with:\n%s", ma.text(), want)
	}
	my := mysqlDialect.changeSource(src, false)
	if want := "CHANGE REPLICATION SOURCE TO SOURCE_HOST = 'db-0.db-headless', SOURCE_PORT = 3306, SOURCE_USER = 'replicator', SOURCE_PASSWORD = " + lit +
		", SOURCE_AUTO_POSITION = 1, SOURCE_CONNECT_RETRY = 5, GET_SOURCE_PUBLIC_KEY = 1;\n"; !strings.HasSuffix(my.text(), want) {
		t.Errorf("MySQL replication:\n%s\nwant it to end with:\n%s", my.text(), want)
	}
	// With TLS, the primary's certificate is verified against the cluster's CA.
	src.ca = "/run/mooring/tls/ca.crt"
	if want := ", MASTER_USE_GTID = slave_pos, MASTER_CONNECT_RETRY = 5, MASTER_SSL = 1, MASTER_SSL_CA = '/run/mooring/tls/ca.crt', MASTER_SSL_VERIFY_SERVER_CERT = 1;\n"; !strings.Contains(mariadbDialect.changeSource(src, true).text(), want) {
		t.Errorf("MariaDB replication over TLS:\n%s\nwant:\n%s", mariadbDialect.changeSource(src, true).text(), want)
	}
	if want := "GET_SOURCE_PUBLIC_KEY = 1, SOURCE_SSL = 1, SOURCE_SSL_CA = '/run/mooring/tls/ca.crt', SOURCE_SSL_VERIFY_SERVER_CERT = 1;\n"; !strings.Contains(mysqlDialect.changeSource(src, true).text(), want) {
		t.Errorf("MySQL replication over TLS:\n%s\nwant:\n%s", mysqlDialect.changeSource(src, true).text(), want)
	}
	for _, s := range []script{ma, my} {
		if !strings.Contains(s.text(), "NO_BACKSLASH_ESCAPES") || !strings.Contains(s.text(), "SET SESSION sql_log_bin = 0;\nSTOP REPLICA;") {
			t.Errorf("not quiet, kept in the replica's binary log, or replication not stopped first:\n%s", s.text())
		}
		for _, st := range s {
			if strings.Contains(st.shown, "p'a") {
				t.Errorf("shown with its password: %s", st.shown)
			}
		}
	}

	leftovers := []string{"app", "we`ird"}
	for _, tc := range []struct {
		d      *dialect
		series []int
		want   string
	}{
		{&mariadbDialect, []int{11, 8}, "RESET MASTER;\nSET GLOBAL gtid_slave_pos = '';\n"},
		{&mysqlDialect, []int{8, 0}, "RESET MASTER;\n"},
		{&mysqlDialect, []int{8, 4}, "RESET BINARY LOGS AND GTIDS;\n"},
	} {
		text := tc.d.resetReplica(tc.series, leftovers).text()
		if !strings.HasPrefix(text, "SET SESSION sql_log_bin = 0;\nSTOP REPLICA;\nRESET REPLICA ALL;\nDROP DATABASE IF EXISTS `app`;\nDROP DATABASE IF EXISTS `we``ird`;\n") ||
			!strings.HasSuffix(text, tc.want) {
			t.Errorf("%s %v reset:\n%s", tc.d.name, tc.series, text)
		}
	}
}

func TestMariaDBReplicationPassword(t *testing.T) {
	for _, tc := range []struct {
		engine, pw, want string
	}{
		{"mariadb", strings.Repeat("x", 96), ""},
		{"mariadb", strings.Repeat("x", 97), "at most 96"},
		{"mariadb", "trailing\n", "line break"},
		{"mysql", strings.Repeat("x", 33), "at most 32"},
		{"mysql", "two\nlines", ""},
	} {
		m := testMariaDB(t, tc.engine, 1)
		writeSecrets(t, m, "admin", "app", "x")
		if err := os.WriteFile(filepath.Join(m.cfg.ReplicationSecretDir, "password"), []byte(tc.pw), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := m.replicationPassword()
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s password of %d bytes: %v, want %q", tc.engine, len(tc.pw), err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), tc.pw) {
			t.Errorf("the error has the password: %v", err)
		}
	}
}

// An error of a script with a password names the statement without it and withholds
// the server's message, which may quote the password.
func TestMariaDBScriptFailure(t *testing.T) {
	s := mariadbDialect.usersSetup(users{admin: "two\nline pw", replication: "r", appUser: "app", appPassword: "app\npw\n"})
	n := strings.Count(s.text()[:strings.Index(s.text(), "CREATE USER 'app'")], "\n") + 1
	stderr := "ERROR 1396 (HY000) at line " + strconv.Itoa(n) + ": Operation CREATE USER failed for 'app'@'%' near 'app\npw'"
	err := s.failure(errors.New("mariadb: exit status 1"), stderr)
	if msg := err.Error(); strings.Contains(msg, "pw") || !strings.Contains(msg, "ERROR 1396 (HY000) in CREATE USER 'app'@'%' IDENTIFIED BY '…';") {
		t.Errorf("failure: %s", msg)
	}
	plain := script{{sql: "SELECT nonsense;"}}
	if msg := plain.failure(errors.New("exit status 1"), "ERROR 1054 (42S22) at line 1: Unknown column 'nonsense'").Error(); !strings.Contains(msg, "Unknown column") {
		t.Errorf("a script without secrets loses the server's message: %s", msg)
	}
	if st, ok := (script{{sql: "A;"}, {sql: "B\nC;"}, {sql: "D;"}}).statementAt(3); !ok || st.sql != "B\nC;" {
		t.Errorf("statementAt(3) = %q %v", st.sql, ok)
	}
}

// Observe's parsing of the client's batch output, as MariaDB and MySQL print it.
func TestMariaDBObservation(t *testing.T) {
	row := func(kv ...string) string {
		var names, values []string
		for i := 0; i < len(kv); i += 2 {
			names, values = append(names, kv[i]), append(values, kv[i+1])
		}
		return strings.Join(names, "\t") + "\n" + strings.Join(values, "\t") + "\n"
	}
	seq := func(o Observation) int64 {
		if o.Sequence == nil {
			return -1
		}
		return *o.Sequence
	}
	for _, tc := range []struct {
		name, out string
		d         *dialect
		role, pos string
		seq       int64
		streaming bool
		err       string
	}{
		{"mariadb primary", row("read_only", "0", "binlog_pos", "0-1-17", "slave_pos", ""), &mariadbDialect, RolePrimary, "0-1-17", 17, false, ""},
		{"mariadb fresh replica", row("read_only", "1", "binlog_pos", "", "slave_pos", ""), &mariadbDialect, RoleReplica, "", 0, false, ""},
		{"mariadb streaming replica", row("read_only", "1", "binlog_pos", "0-1-17", "slave_pos", "0-1-17") +
			row("Slave_IO_State", "Waiting for master to send event", "Master_Host", "db-0.db-headless", "Slave_IO_Running", "Yes", "Slave_SQL_Running", "Yes", "Last_IO_Error", "", "Last_SQL_Error", ""),
			&mariadbDialect, RoleReplica, "0-1-17", 17, true, ""},
		{"mariadb broken replica", row("read_only", "1", "binlog_pos", "", "slave_pos", "0-1-9") +
			row("Master_Host", "db-0.db-headless", "Slave_IO_Running", "Connecting", "Slave_SQL_Running", "Yes",
				"Last_IO_Error", "error connecting to master 'replicator@db-0.db-headless:3306' - retry-time: 5\\n"+strings.Repeat("x", 400), "Last_SQL_Error", ""),
			&mariadbDialect, RoleReplica, "0-1-9", 9, false, "error connecting to master 'replicator@db-0.db-headless:3306' - retry-time: 5\nxxx"},
		{"mysql primary", row("read_only", "0", "gtid_executed", "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-20,\\n0e2d5f3a-1111-11ef-8000-000000000002:1-3", "server_uuid", "3e11fa47-71ca-11e1-9e33-c80aa9429562"),
			&mysqlDialect, RolePrimary, "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-20,0e2d5f3a-1111-11ef-8000-000000000002:1-3", 20, false, ""},
		{"mysql replica", row("read_only", "1", "gtid_executed", "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-18", "server_uuid", "0e2d5f3a-1111-11ef-8000-000000000002") +
			row("Source_Host", "db-0", "Source_UUID", "3e11fa47-71ca-11e1-9e33-c80aa9429562", "Replica_IO_Running", "Yes", "Replica_SQL_Running", "No", "Last_IO_Error", "", "Last_SQL_Error", "Could not execute Write_rows"),
			&mysqlDialect, RoleReplica, "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-18", 18, false, "Could not execute Write_rows"},
		{"mysql replica not connected", row("read_only", "1", "gtid_executed", "", "server_uuid", "0e2d5f3a-1111-11ef-8000-000000000002"),
			&mysqlDialect, RoleReplica, "", -1, false, ""},
	} {
		vars, status, err := parseObserveOutput(tc.out)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		o := tc.d.observation(vars, status)
		if o.Role != tc.role || o.Position != tc.pos || seq(o) != tc.seq || o.Streaming != tc.streaming || !strings.HasPrefix(o.ReplicationError, tc.err) {
			t.Errorf("%s: %+v (sequence %d), want role %s position %q sequence %d streaming %v error %q", tc.name, o, seq(o), tc.role, tc.pos, tc.seq, tc.streaming, tc.err)
		}
		if len(o.ReplicationError) > maxReplicationError+len("…") {
			t.Errorf("%s: replication error of %d bytes", tc.name, len(o.ReplicationError))
		}
	}
	if _, _, err := parseObserveOutput("read_only\n"); err == nil {
		t.Error("a header alone was parsed")
	}
}
