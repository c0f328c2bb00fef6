package instance

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// mariadb drives MariaDB and MySQL, which Mooring runs alike: mariadb-install-db (or
// mysqld --initialize-insecure) into a temporary directory on every instance; on the
// primary, the users over the local socket; on a replica, a logical copy of the primary
// (the dump tool piped into the local client) and GTID replication from it. What the two
// servers do differently is in dialect, below, and nowhere else.
//
// The local administrator is who the manager connects as over the private socket in
// RunDir. On MariaDB it is the OS user the image runs the server as (uid 999 "mysql"),
// which mariadb-install-db gives a unix_socket superuser account: no password exists to
// leak or to go stale. MySQL's images have no socket authentication loaded by default,
// so there it is root@localhost: passwordless after --initialize-insecure, given the
// admin password by the first AfterStart, and reached through an option file from then on.
type mariadb struct {
	cfg Config
	d   *dialect
	// searchDirs are where the binaries are looked for after PATH.
	searchDirs []string
	// bins are the binaries' paths by name, found by Check.
	bins map[string]string
	// series is the binaries' release series: the first two numbers of their version.
	series []int
}

func newMariaDB(c Config) *mariadb {
	d := &mariadbDialect
	if c.Engine == "mysql" {
		d = &mysqlDialect
	}
	return &mariadb{cfg: c, d: d, searchDirs: []string{"/usr/sbin", "/usr/bin"}}
}

// dialect is everything MariaDB and MySQL do differently.
type dialect struct {
	// mysql is set for MySQL: the methods below branch on it.
	mysql bool
	// name is the server's name in messages; image is the official image's repository.
	name, image string
	// dataSubdir is the server's directory in the data volume.
	dataSubdir string
	// The binaries: server, command-line client, dump tool, admin tool, and the tool
	// that initialises a data directory ("" when the server does: mysqld --initialize).
	server, client, dump, admin, install string
	// upgradeInfo are the files the server writes in its data directory naming the
	// version that last ran on it.
	upgradeInfo []string
	// inPlaceUpgrades are the series changes the server makes on its own at startup, as
	// Mooring's admission webhook allows them (internal/webhook): MySQL 8.0 to 8.4.
	inPlaceUpgrades map[string][]string
	// conf is the server settings particular to the engine.
	conf []string
	// clientArgs are added to every run of the command-line client.
	clientArgs []string
	// dumpArgs make the dump consistent and carry the primary's GTID position.
	dumpArgs []string
	// maxReplPassword is the longest password CHANGE MASTER / CHANGE REPLICATION SOURCE
	// takes. The server's error for a longer one quotes the password, so the manager
	// refuses it first.
	maxReplPassword int
	// lineBasedReplicaInfo: the replica keeps its source's settings in a file of lines
	// (MariaDB's master.info), so a password with a line break breaks it.
	lineBasedReplicaInfo bool
	// reloadTLS makes the server read its certificate files again.
	reloadTLS string
	// skipReplicaStart is the setting that keeps the server from starting replication
	// by itself at startup.
	skipReplicaStart string
	// Columns of SHOW REPLICA STATUS, under the names the server may give them.
	ioRunning, sqlRunning, sourceHost []string
}

var mariadbDialect = dialect{
	name: "MariaDB", image: "docker.io/library/mariadb", dataSubdir: "mariadb",
	server: "mariadbd", client: "mariadb", dump: "mariadb-dump", admin: "mariadb-admin", install: "mariadb-install-db",
	upgradeInfo: []string{"mariadb_upgrade_info", "mysql_upgrade_info"},
	conf: []string{
		"log_slave_updates = ON",
		// A replica refuses a GTID out of order rather than diverge silently.
		"gtid_strict_mode = ON",
	},
	// The client echoes a failed statement, password included, unless told not to.
	clientArgs:           []string{"--skip-print-query-on-error"},
	dumpArgs:             []string{"--gtid", "--master-data=1"},
	maxReplPassword:      96,
	lineBasedReplicaInfo: true,
	reloadTLS:            "FLUSH SSL;",
	skipReplicaStart:     "skip_slave_start = ON",
	// MariaDB kept the columns' old names when SHOW SLAVE STATUS became SHOW REPLICA STATUS.
	ioRunning:  []string{"Slave_IO_Running", "Replica_IO_Running"},
	sqlRunning: []string{"Slave_SQL_Running", "Replica_SQL_Running"},
	sourceHost: []string{"Master_Host", "Source_Host"},
}

var mysqlDialect = dialect{
	mysql: true,
	name:  "MySQL", image: "docker.io/library/mysql", dataSubdir: "mysql",
	server: "mysqld", client: "mysql", dump: "mysqldump", admin: "mysqladmin",
	upgradeInfo:     []string{"mysql_upgrade_info"},
	inPlaceUpgrades: map[string][]string{"8.0": {"8.4"}},
	conf: []string{
		"log_replica_updates = ON",
		"gtid_mode = ON",
		"enforce_gtid_consistency = ON",
		// The X protocol is not offered; its plugin would take memory and a second port.
		"mysqlx = OFF",
	},
	// --source-data=2 makes mysqldump take the brief global lock that makes the GTID set
	// it writes (--set-gtid-purged) match the snapshot; the CHANGE it writes is commented.
	dumpArgs:         []string{"--source-data=2", "--set-gtid-purged=ON"},
	maxReplPassword:  32,
	reloadTLS:        "ALTER INSTANCE RELOAD TLS;",
	skipReplicaStart: "skip_replica_start = ON",
	ioRunning:        []string{"Replica_IO_Running"},
	sqlRunning:       []string{"Replica_SQL_Running"},
	sourceHost:       []string{"Source_Host"},
}

const (
	// MySQLAppDatabase is the database the application user is given on MariaDB and
	// MySQL, which have no default one (PostgreSQL's is "postgres").
	MySQLAppDatabase = "app"
	// seededFile marks a replica's data directory as a complete copy of the primary.
	seededFile = "mooring-seeded"
	// mysqlRoot is the superuser: root@'%' has the admin password.
	mysqlRoot = "root"
	// maxReplicationError caps the replica's error in /status.
	maxReplicationError = 300
)

func (m *mariadb) datadir() string        { return filepath.Join(m.cfg.DataDir, m.d.dataSubdir) }
func (m *mariadb) serverConfFile() string { return filepath.Join(m.cfg.RunDir, "my.cnf") }
func (m *mariadb) socket() string         { return filepath.Join(m.cfg.RunDir, "mysqld.sock") }
func (m *mariadb) pidFile() string        { return filepath.Join(m.cfg.RunDir, "mysqld.pid") }
func (m *mariadb) localConfFile() string  { return filepath.Join(m.cfg.RunDir, "local.cnf") }
func (m *mariadb) insecureConfFile() string {
	return filepath.Join(m.cfg.RunDir, "local-nopassword.cnf")
}
func (m *mariadb) primaryConfFile() string { return filepath.Join(m.cfg.RunDir, "primary.cnf") }
func (m *mariadb) tool(name string) string { return m.bins[name] }

// Check finds the binaries on PATH, in /usr/sbin or in /usr/bin (the official images and
// Debian's packages), compares their release series with spec.version's and with the
// data directory's, and refuses a volume holding something else.
func (m *mariadb) Check(ctx context.Context) error {
	names := []string{m.d.server, m.d.client, m.d.dump, m.d.admin}
	if m.d.install != "" {
		names = append(names, m.d.install)
	}
	m.bins = map[string]string{}
	var missing []string
	for _, n := range names {
		if p := m.find(n); p != "" {
			m.bins[n] = p
		} else {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		return faultf(FaultMissingBinaries, "the image has no %s %s: looked for %s on PATH and in %s; run an image with the %s %s server (%s:%s)",
			m.d.name, strings.Join(missing, ", "), strings.Join(missing, ", "), strings.Join(m.searchDirs, ", "),
			m.d.name, m.cfg.Version, m.d.image, m.cfg.Version)
	}
	out, err := run(exec.CommandContext(ctx, m.tool(m.d.server), "--version"))
	if err != nil {
		return faultf(FaultMissingBinaries, "%s --version failed: %v", m.tool(m.d.server), err)
	}
	version, series, ok := parseServerVersion(out)
	if !ok {
		return faultf(FaultMissingBinaries, "cannot tell the %s version from %q", m.d.name, strings.TrimSpace(out))
	}
	m.series = series
	if want, ok := parseSeries(m.cfg.Version); ok && !slices.Equal(want, series[:min(len(want), len(series))]) {
		return faultf(FaultVersionMismatch, "the image runs %s %s, but the cluster's spec.version is %s; run the image of %s %s (%s:%s)",
			m.d.name, version, m.cfg.Version, m.d.name, m.cfg.Version, m.d.image, m.cfg.Version)
	}
	if !m.Initialised() {
		return unknownData(m.cfg.DataDir, m.d.dataSubdir)
	}
	return m.d.checkDataVersion(m.datadir(), series)
}

// find is the path of a binary on PATH or in the search directories, or "".
func (m *mariadb) find(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, d := range m.searchDirs {
		if p := filepath.Join(d, name); isExecutable(p) {
			return p
		}
	}
	return ""
}

var serverVersionRE = regexp.MustCompile(`\bVer (\d+)\.(\d+)\.(\d+)`)

// parseServerVersion reads `mariadbd --version` ("mariadbd  Ver 11.8.2-MariaDB-ubu2404
// for debian-linux-gnu ...") or `mysqld --version` ("mysqld  Ver 8.4.3 for Linux ...").
func parseServerVersion(out string) (version string, series []int, ok bool) {
	m := serverVersionRE.FindStringSubmatch(out)
	if m == nil {
		return "", nil, false
	}
	a, _ := strconv.Atoi(m[1])
	b, _ := strconv.Atoi(m[2])
	return m[1] + "." + m[2] + "." + m[3], []int{a, b}, true
}

// parseSeries is the release series of a version: its first two numbers ("11.8" of
// "11.8.2-MariaDB"), or the one there is.
func parseSeries(v string) ([]int, bool) {
	v = strings.TrimSpace(v)
	if i := strings.IndexFunc(v, func(r rune) bool { return r != '.' && (r < '0' || r > '9') }); i >= 0 {
		v = v[:i]
	}
	parts := strings.Split(v, ".")
	var series []int
	for _, p := range parts[:min(2, len(parts))] {
		n, err := strconv.Atoi(p)
		if err != nil {
			return nil, false
		}
		series = append(series, n)
	}
	return series, len(series) > 0
}

func seriesString(s []int) string {
	parts := make([]string, len(s))
	for i, n := range s {
		parts[i] = strconv.Itoa(n)
	}
	return strings.Join(parts, ".")
}

// checkDataVersion compares the series that last ran on the data directory, as its
// upgrade-info file says, with the binaries'. A directory without the file passes: the
// server itself refuses files it cannot read.
func (d *dialect) checkDataVersion(datadir string, binSeries []int) error {
	var written string
	for _, f := range d.upgradeInfo {
		if b, err := os.ReadFile(filepath.Join(datadir, f)); err == nil {
			written = strings.TrimSpace(strings.TrimRight(string(b), "\x00"))
			break
		}
	}
	data, ok := parseSeries(written)
	if !ok || len(data) < 2 {
		return nil
	}
	have, bin := seriesString(data), seriesString(binSeries)
	switch c := slices.Compare(data, binSeries); {
	case c == 0:
		return nil
	case c > 0:
		return faultf(FaultVersionMismatch, "the data directory was written by %s %s and this image runs %s %s, which cannot use it; set spec.version back to %s. The data directory is left as it is",
			d.name, have, d.name, bin, have)
	case slices.Contains(d.inPlaceUpgrades[have], bin):
		return nil // the server upgrades its files at startup
	default:
		how := "a new series needs mariadb-upgrade, which Mooring does not run"
		if d.mysql {
			how = "MySQL upgrades its files in place only from one LTS series to the next"
		}
		return faultf(FaultVersionMismatch, "the data directory was written by %s %s and this image runs %s %s: %s; set spec.version back to %s (to move to %s, restore a Backup into a new cluster). The data directory is left as it is",
			d.name, have, d.name, bin, how, have, bin)
	}
}

// Initialised: the system schema exists; the directory appears only complete.
func (m *mariadb) Initialised() bool {
	fi, err := os.Stat(filepath.Join(m.datadir(), "mysql"))
	return err == nil && fi.IsDir()
}

// Initialise makes an empty data directory in a temporary one and renames it into place,
// on the primary and on a replica alike: a replica is filled from the primary by
// AfterStart, which needs its server running, and marks it seeded when done.
func (m *mariadb) Initialise(ctx context.Context) error {
	if err := m.writeServerConf(); err != nil {
		return err
	}
	tmp := m.datadir() + ".init"
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	var cmd *exec.Cmd
	if m.d.install != "" {
		admin, err := localAdminName()
		if err != nil {
			return faultf(FaultInitFailed, "%v", err)
		}
		// The OS user gets a unix_socket superuser account (mysql@localhost in the
		// official image); root@localhost is socket-only too. No test database. --force
		// skips looking the pod's own name up in DNS, which the accounts do not use.
		cmd = exec.CommandContext(ctx, m.tool(m.d.install), "--defaults-file="+m.serverConfFile(), "--datadir="+tmp,
			"--auth-root-authentication-method=socket", "--auth-root-socket-user="+admin, "--skip-test-db",
			"--skip-name-resolve", "--force")
	} else {
		// root@localhost without a password, reachable over the private socket only
		// until AfterStart gives it the admin password.
		cmd = exec.CommandContext(ctx, m.tool(m.d.server), "--defaults-file="+m.serverConfFile(), "--initialize-insecure", "--datadir="+tmp)
	}
	if _, err := run(cmd); err != nil {
		_ = os.RemoveAll(tmp)
		return faultf(FaultInitFailed, "%s failed: %v", filepath.Base(cmd.Path), err)
	}
	return os.Rename(tmp, m.datadir())
}

// localAdminName is the OS user's name, which MariaDB's unix_socket authentication
// matches against the account's.
func localAdminName() (string, error) {
	u, err := user.Current()
	if err != nil || u.Username == "" {
		return "", fmt.Errorf("the container's user (uid %d) has no name in /etc/passwd: MariaDB's local administrator logs in over the socket as the OS user of that name; run the image's mysql user (uid 999)", os.Getuid())
	}
	return u.Username, nil
}

// Configure writes the server's my.cnf and the clients' option files, at every start.
func (m *mariadb) Configure(context.Context) error {
	if err := m.writeServerConf(); err != nil {
		return err
	}
	return m.writeClientConf()
}

// writeServerConf writes my.cnf, and the certificates it names.
func (m *mariadb) writeServerConf() error {
	if _, err := installTLS(m.cfg); err != nil {
		return err
	}
	return writePrivate(m.serverConfFile(), m.serverConf())
}

// serverConf is the server's whole configuration: it is started with --defaults-file, so
// no file of the image (Debian's bind-address = 127.0.0.1, say) applies.
func (m *mariadb) serverConf() string {
	readOnly := "OFF"
	if m.cfg.Role() == RoleReplica {
		// Replication and the local administrator still write; clients cannot.
		readOnly = "ON"
	}
	conf := []string{
		"# Written by Mooring at every start; the server reads only this file.",
		"# No log_error: the server logs to standard error, which the container keeps.",
		"[mysqld]",
		"datadir = " + m.datadir(),
		"socket = " + m.socket(),
		"pid-file = " + m.pidFile(),
		"port = " + strconv.Itoa(m.cfg.Port),
		"bind-address = *",
		"skip-name-resolve",
		"character-set-server = utf8mb4",
		"server_id = " + strconv.Itoa(m.cfg.Index+1),
		"log_bin = binlog",
		"relay_log = relay-bin",
		"binlog_format = ROW",
		// Binary logs are kept a week (a replica down longer is copied again), in files
		// small enough that purging frees a small volume.
		"binlog_expire_logs_seconds = 604800",
		"max_binlog_size = 64M",
		"read_only = " + readOnly,
		// Replication starts when AfterStart has pointed it at the primary, once.
		m.d.skipReplicaStart,
	}
	// The buffer pool follows the container's memory limit (memory.go).
	conf = append(conf, MemorySettings(m.cfg.Engine, m.cfg.MemoryLimit)...)
	conf = append(conf, m.d.conf...)
	if m.cfg.TLS() {
		conf = append(conf, mysqlTLSConf(m.cfg.tlsFiles())...)
	}
	return strings.Join(conf, "\n") + "\n"
}

// writeClientConf writes the option files the clients read with --defaults-file (so no
// file of the image or of $HOME applies): the local administrator's over the socket and,
// on a replica, root's on the primary. Passwords are only ever in these files (0600).
func (m *mariadb) writeClientConf() error {
	local := map[string]string{"socket": m.socket(), "protocol": "socket", "default-character-set": "utf8mb4"}
	var admin string
	if m.d.mysql {
		var err error
		if admin, err = m.cfg.AdminPassword(); err != nil {
			return err
		}
		if strings.ContainsRune(admin, 0) {
			return errors.New("the admin Secret's password contains a NUL byte, which MariaDB and MySQL cannot take")
		}
	}
	if m.d.mysql {
		insecure := map[string]string{"socket": m.socket(), "protocol": "socket", "default-character-set": "utf8mb4", "user": mysqlRoot}
		if err := writePrivate(m.insecureConfFile(), clientConf(insecure)); err != nil {
			return err
		}
		local["user"], local["password"] = mysqlRoot, admin
	} else {
		name, err := localAdminName()
		if err != nil {
			return err
		}
		local["user"] = name
	}
	if err := writePrivate(m.localConfFile(), clientConf(local)); err != nil {
		return err
	}
	if m.cfg.Role() != RoleReplica {
		return nil
	}
	replication, err := m.replicationPassword()
	if err != nil {
		return err
	}
	primary := map[string]string{
		"host": m.cfg.PrimaryHost, "port": strconv.Itoa(m.cfg.PrimaryPort), "protocol": "tcp",
		"user": ReplicationUser, "password": replication, "default-character-set": "utf8mb4",
	}
	for k, v := range m.d.clientTLS(m.cfg) {
		primary[k] = v
	}
	return writePrivate(m.primaryConfFile(), clientConf(primary))
}

// clientConf is a [client] group of the given options, in a stable order.
func clientConf(opts map[string]string) string {
	keys := make([]string, 0, len(opts))
	for k := range opts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	b.WriteString("# Written by Mooring at every start.\n[client]\n")
	for _, k := range keys {
		b.WriteString(k + " = " + optionValue(opts[k]) + "\n")
	}
	return b.String()
}

// optionValue quotes a value for an option file: between double quotes, with the escapes
// the servers' option-file reader (mysys my_default.c) turns back into the characters, so
// that #, quotes, spaces and line breaks in a password survive.
func optionValue(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, `'`, `\'`, "\n", `\n`, "\r", `\r`, "\t", `\t`, "\b", `\b`)
	return `"` + r.Replace(s) + `"`
}

// writePrivate replaces path with content, readable by this user only; a reader never
// sees half a file.
func writePrivate(path, content string) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func (m *mariadb) Server() *exec.Cmd {
	return exec.Command(m.tool(m.d.server), "--defaults-file="+m.serverConfFile())
}

// StopSignal is SIGTERM: the server shuts down cleanly on it, as on mariadb-admin shutdown.
func (m *mariadb) StopSignal() os.Signal { return syscall.SIGTERM }

// Ready pings the server over the socket: the admin tool answers 0 once the server
// accepts connections, whether or not the account logs in.
func (m *mariadb) Ready(ctx context.Context) error {
	cmd := exec.CommandContext(ctx, m.tool(m.d.admin), "--defaults-file="+m.localConfFile(), "--connect-timeout=3", "ping")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s does not accept connections yet (%s ping: %w: %s)", m.d.name, m.d.admin, err, lastLines(string(out), 2))
	}
	return nil
}

// stmt is one SQL statement of a script; shown, when set, is how an error names it: the
// statement without its secrets.
type stmt struct{ sql, shown string }

// script is SQL for the client's standard input, never its arguments.
type script []stmt

func (s script) text() string {
	var b strings.Builder
	for _, st := range s {
		b.WriteString(st.sql + "\n")
	}
	return b.String()
}

func (s script) secret() bool {
	return slices.ContainsFunc(s, func(st stmt) bool { return st.shown != "" })
}

// statementAt is the statement that spans line n (from 1) of the script's text.
func (s script) statementAt(n int) (stmt, bool) {
	line := 1
	for _, st := range s {
		end := line + strings.Count(st.sql, "\n")
		if n >= line && n <= end {
			return st, true
		}
		line = end + 1
	}
	return stmt{}, false
}

var clientErrorRE = regexp.MustCompile(`ERROR (\d+) \(([0-9A-Z]+)\)(?: at line (\d+))?`)

// failure explains a failed run of the script. For a script that carries a secret the
// server's message is left out: some quote the statement (the password with it); the
// error's code and the statement, secrets removed, say what failed.
func (s script) failure(err error, stderr string) error {
	if !s.secret() {
		return fmt.Errorf("%w: %s", err, lastLines(stderr, 3))
	}
	m := clientErrorRE.FindStringSubmatch(stderr)
	if m == nil {
		return fmt.Errorf("%w (the client's message is withheld: the statements carry a password)", err)
	}
	what := "a statement"
	if n, convErr := strconv.Atoi(m[3]); convErr == nil {
		if st, ok := s.statementAt(n); ok {
			what = st.sql
			if st.shown != "" {
				what = st.shown
			}
		}
	}
	return fmt.Errorf("%w: ERROR %s (%s) in %s (the server's message is withheld: the statements carry a password)", err, m[1], m[2], what)
}

// quietSession keeps a session's statements out of the general log, and makes ' the only
// character a literal escapes, whatever the server's sql_mode (credentials.sh does the
// same). The client follows the server's NO_BACKSLASH_ESCAPES when it splits statements.
var quietSession = script{
	{sql: "SET SESSION sql_log_off = 1;"},
	{sql: "SET SESSION sql_mode = CONCAT_WS(',', NULLIF(@@sql_mode, ''), 'NO_BACKSLASH_ESCAPES');"},
}

// noBinlog keeps a replica's own statements out of its binary log: a GTID of its
// server_id there would be out of order with the primary's next, which gtid_strict_mode
// refuses to apply (MariaDB), or an errant transaction (MySQL).
var noBinlog = stmt{sql: "SET SESSION sql_log_bin = 0;"}

// sqlLiteral is s as a string literal under NO_BACKSLASH_ESCAPES.
func sqlLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// sqlIdent is s as a quoted identifier.
func sqlIdent(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }

// account is user@host, both as literals.
func account(user, host string) string { return sqlLiteral(user) + "@" + sqlLiteral(host) }

// errAccessDenied is the client's failure to log in (ERROR 1045).
var errAccessDenied = errors.New("access denied")

// sql runs s as the local administrator over the socket, with the client in batch mode
// (tab-separated, escaped values) and binary mode (no \r\n or NUL translation inside
// literals, no client commands). It returns the client's standard output.
func (m *mariadb) sql(ctx context.Context, s script, columnNames bool) (string, error) {
	out, _, err := m.asLocalAdmin(ctx, s, columnNames)
	return out, err
}

// login is the option file the local administrator logs in with now.
func (m *mariadb) login(ctx context.Context) (string, error) {
	_, cnf, err := m.asLocalAdmin(ctx, script{{sql: "SELECT 1;"}}, false)
	return cnf, err
}

// asLocalAdmin runs s with the first of the local administrator's option files the
// server accepts. MariaDB's administrator has one, without a password. MySQL's root has
// the admin password, except before the first AfterStart (or, on a replica, before the
// copy of the primary brings the primary's root): then an empty one.
func (m *mariadb) asLocalAdmin(ctx context.Context, s script, columnNames bool) (out, cnf string, err error) {
	if !m.d.mysql {
		out, err = m.runClient(ctx, m.localConfFile(), s, columnNames)
		return out, m.localConfFile(), err
	}
	for _, cnf := range []string{m.localConfFile(), m.insecureConfFile()} {
		if out, err = m.runClient(ctx, cnf, s, columnNames); !errors.Is(err, errAccessDenied) {
			return out, cnf, err
		}
	}
	// The manager logs in with the password it set; it cannot learn one the admin Secret
	// held before a change, so such a change is not followed on MySQL.
	return "", "", fmt.Errorf("root@localhost refuses both the admin Secret's password and an empty one; it has had the admin password since the first start: if the admin Secret changed since, put the previous password back: %w", err)
}

func (m *mariadb) runClient(ctx context.Context, cnf string, s script, columnNames bool) (string, error) {
	args := []string{"--defaults-file=" + cnf, "--batch", "--binary-mode", "--connect-timeout=5"}
	if !columnNames {
		args = append(args, "--skip-column-names")
	}
	args = append(args, m.d.clientArgs...)
	cmd := exec.CommandContext(ctx, m.tool(m.d.client), args...)
	cmd.Stdin = strings.NewReader(s.text())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		err = fmt.Errorf("%s: %w", m.d.client, err)
		if strings.Contains(stderr.String(), "ERROR 1045 ") {
			err = fmt.Errorf("%w: %w", err, errAccessDenied)
		}
		return "", s.failure(err, stderr.String())
	}
	return stdout.String(), nil
}

// AfterStart makes sure of the users on the primary; on a replica, copies the primary
// once, makes sure replication runs, and of the users too: every instance sets its
// users' passwords itself, out of its binary log, so no password travels to the
// replicas or stays in a binary log.
func (m *mariadb) AfterStart(ctx context.Context) error {
	if m.cfg.Role() == RoleReplica {
		if _, err := os.Stat(filepath.Join(m.datadir(), seededFile)); err != nil {
			if err := m.seed(ctx); err != nil {
				return err
			}
		} else if err := m.replicate(ctx); err != nil {
			return err
		}
	}
	return m.setUpUsers(ctx)
}

// Refresh applies changed mounted Secrets: new certificates (the server reloads them
// without a restart), the option files, the users' passwords, and on a replica the
// replication password (replication is stopped and started again, the server is not).
func (m *mariadb) Refresh(ctx context.Context) error {
	changed, err := installTLS(m.cfg)
	if err != nil {
		return err
	}
	if changed {
		if _, err := m.sql(ctx, script{{sql: m.d.reloadTLS}}, false); err != nil {
			return fmt.Errorf("reloading the certificates: %w", err)
		}
	}
	if err := m.writeClientConf(); err != nil {
		return err
	}
	if err := m.setUpUsers(ctx); err != nil {
		return err
	}
	if m.cfg.Role() == RoleReplica {
		return m.replicate(ctx)
	}
	return nil
}

// setUpUsers makes sure of the instance's users as the Secrets say, at every start and
// whenever a Secret changes: the superuser (over the network only as spec.superuserAccess
// allows), the replication user with its own password, and the application user with
// the credentials Secret's password (and, when missing, its database).
func (m *mariadb) setUpUsers(ctx context.Context) error {
	admin, err := m.cfg.AdminPassword()
	if err != nil {
		return err
	}
	replication, err := m.replicationPassword()
	if err != nil {
		return err
	}
	user, password, err := m.cfg.AppCredentials()
	if err != nil {
		return err
	}
	if err := refuseReserved(m.cfg.Engine, user); err != nil {
		return err
	}
	check := append(slices.Clone(quietSession), stmt{sql: "SELECT COUNT(*) FROM mysql.user WHERE User = " + sqlLiteral(user) + " AND Host = '%';"})
	out, err := m.sql(ctx, check, false)
	if err != nil {
		return err
	}
	u := users{admin: admin, replication: replication, appUser: user, appPassword: password,
		appExists: strings.TrimSpace(out) != "0", superuserAccess: m.cfg.SuperuserAccess, tls: m.cfg.TLS()}
	if _, err := m.sql(ctx, m.d.usersSetup(u), false); err != nil {
		return fmt.Errorf("setting up the users: %w", err)
	}
	return nil
}

// seed copies the primary into this replica: the dump tool on the primary (as the
// replication user, over verified TLS, its password in the primary's option file) piped into the local client, with this session's
// statements kept out of the local binary log. The copy carries the primary's GTID
// position; replication starts from it. Whatever a failed attempt left is dropped first.
func (m *mariadb) seed(ctx context.Context) error {
	primary := fmt.Sprintf("%s:%d", m.cfg.PrimaryHost, m.cfg.PrimaryPort)
	probe := exec.CommandContext(ctx, m.tool(m.d.client), "--defaults-file="+m.primaryConfFile(), "--batch", "--connect-timeout=5", "--execute=SELECT 1")
	if out, err := probe.CombinedOutput(); err != nil {
		return fmt.Errorf("waiting for the primary %s to answer as the replication user: %w: %s", primary, err, lastLines(string(out), 2))
	}
	out, err := m.sql(ctx, script{{sql: "SELECT HEX(SCHEMA_NAME) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys');"}}, false)
	if err != nil {
		return err
	}
	var leftovers []string
	for _, h := range strings.Fields(out) {
		if b, err := hex.DecodeString(h); err == nil {
			leftovers = append(leftovers, string(b))
		}
	}
	password, err := m.replicationPassword()
	if err != nil {
		return err
	}
	if _, err := m.sql(ctx, m.d.resetReplica(m.series, leftovers), false); err != nil {
		return fmt.Errorf("preparing to copy the primary: %w", err)
	}
	// Configured, not started: the dump's own CHANGE MASTER and GTID position apply to it.
	if _, err := m.sql(ctx, m.d.changeSource(m.source(password), false), false); err != nil {
		return err
	}
	cnf, err := m.login(ctx)
	if err != nil {
		return err
	}
	if err := m.copyPrimary(ctx, cnf); err != nil {
		return faultf(FaultCloneFailed, "copying the primary %s failed: %v", primary, err)
	}
	// The copy replaced the users with the primary's (the same ones): load them, then
	// make sure the local administrator still logs in.
	if _, err := m.sql(ctx, script{noBinlog, {sql: "FLUSH PRIVILEGES;"}}, false); err != nil {
		return err
	}
	if _, err := m.login(ctx); err != nil {
		return fmt.Errorf("after copying the primary, the local administrator cannot log in: %w", err)
	}
	if err := m.replicate(ctx); err != nil {
		return err
	}
	return writePrivate(filepath.Join(m.datadir(), seededFile), "copied from "+primary+" at "+time.Now().UTC().Format(time.RFC3339)+"\n")
}

// copyPrimary pipes the dump tool into the client, process to process.
func (m *mariadb) copyPrimary(ctx context.Context, localConf string) error {
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	dumpArgs := append([]string{"--defaults-file=" + m.primaryConfFile(), "--all-databases", "--single-transaction",
		"--routines", "--events", "--triggers"}, m.d.dumpArgs...)
	dump := exec.CommandContext(ctx, m.tool(m.d.dump), dumpArgs...)
	load := exec.CommandContext(ctx, m.tool(m.d.client), "--defaults-file="+localConf, "--batch",
		"--init-command=SET SESSION sql_log_bin = 0")
	var dumpErr, loadOut bytes.Buffer
	dump.Stdout, dump.Stderr = w, &dumpErr
	load.Stdin, load.Stdout, load.Stderr = r, &loadOut, &loadOut
	if err := dump.Start(); err != nil {
		_ = r.Close()
		_ = w.Close()
		return err
	}
	_ = w.Close() // the dump's copy keeps the pipe open; the client sees its end
	// Waited for at once, not after the load: the manager reaps zombies that nobody
	// waits for (reaper.go).
	dumpDone := make(chan error, 1)
	go func() { dumpDone <- dump.Wait() }()
	loadRunErr := load.Run()
	_ = r.Close()
	if loadRunErr != nil && dump.Process != nil {
		_ = dump.Process.Kill() // it would block on a pipe nobody reads
	}
	dumpRunErr := <-dumpDone
	var errs []error
	if dumpRunErr != nil {
		errs = append(errs, fmt.Errorf("%s: %w: %s", m.d.dump, dumpRunErr, lastLines(dumpErr.String(), 3)))
	}
	if loadRunErr != nil {
		errs = append(errs, fmt.Errorf("%s: %w: %s", m.d.client, loadRunErr, truncate(lastLines(loadOut.String(), 3), 400)))
	}
	return errors.Join(errs...)
}

// replicate points replication at the primary, with the current replication password,
// and starts it: the same statements every time.
func (m *mariadb) replicate(ctx context.Context) error {
	password, err := m.replicationPassword()
	if err != nil {
		return err
	}
	if _, err := m.sql(ctx, m.d.changeSource(m.source(password), true), false); err != nil {
		return fmt.Errorf("starting replication from %s: %w", m.cfg.PrimaryHost, err)
	}
	return nil
}

// resetReplica empties a replica that has not been copied yet: no replication, no
// binary log or GTID position of its own (the copy's must be the only one), none of the
// databases a failed attempt left.
func (d *dialect) resetReplica(series []int, leftovers []string) script {
	s := script{noBinlog, {sql: "STOP REPLICA;"}, {sql: "RESET REPLICA ALL;"}}
	for _, db := range leftovers {
		s = append(s, stmt{sql: "DROP DATABASE IF EXISTS " + sqlIdent(db) + ";"})
	}
	switch {
	case !d.mysql:
		s = append(s, stmt{sql: "RESET MASTER;"}, stmt{sql: "SET GLOBAL gtid_slave_pos = '';"})
	case slices.Compare(series, []int{8, 2}) >= 0:
		s = append(s, stmt{sql: "RESET BINARY LOGS AND GTIDS;"}) // RESET MASTER is gone in 8.4
	default:
		s = append(s, stmt{sql: "RESET MASTER;"})
	}
	return s
}

// replicationPassword is the replication Secret's password. One longer than CHANGE
// MASTER takes is refused here: the server's error would quote it.
func (m *mariadb) replicationPassword() (string, error) {
	pw, err := m.cfg.ReplicationPassword()
	if err != nil {
		return "", err
	}
	if n := len(pw); n > m.d.maxReplPassword {
		return "", fmt.Errorf("the replication password has %d bytes; %s's replication takes at most %d: use a shorter one", n, m.d.name, m.d.maxReplPassword)
	}
	if m.d.lineBasedReplicaInfo && strings.ContainsAny(pw, "\n\r") {
		return "", fmt.Errorf("the replication password contains a line break, which %s's replication cannot keep (master.info has a line per setting, and the server refuses to start replication from a broken one); a trailing newline often comes from echo or a file: remove it", m.d.name)
	}
	if strings.ContainsRune(pw, 0) {
		return "", errors.New("the replication password contains a NUL byte, which MariaDB and MySQL cannot take")
	}
	return pw, nil
}

// source is where replication connects: the primary, as the replication user, over TLS
// verified against the cluster's CA when the cluster has TLS.
func (m *mariadb) source(password string) replicationSource {
	src := replicationSource{host: m.cfg.PrimaryHost, port: m.cfg.PrimaryPort, password: password}
	if m.cfg.TLS() {
		src.ca = m.cfg.tlsFiles().ca
	}
	return src
}

// observeSQL asks for the role, the GTID position and the replica's state.
func (d *dialect) observeSQL() script {
	vars := "SELECT @@global.read_only AS read_only, @@global.gtid_binlog_pos AS binlog_pos, @@global.gtid_slave_pos AS slave_pos;"
	if d.mysql {
		vars = "SELECT @@global.read_only AS read_only, @@global.gtid_executed AS gtid_executed, @@global.server_uuid AS server_uuid;"
	}
	return script{{sql: vars}, {sql: "SHOW REPLICA STATUS;"}}
}

// Observe reports the role (a replica is read-only, or has a replication source), the
// GTID position and the replica's threads.
func (m *mariadb) Observe(ctx context.Context) (Observation, error) {
	out, err := m.sql(ctx, m.d.observeSQL(), true)
	if err != nil {
		return Observation{}, err
	}
	vars, status, err := parseObserveOutput(out)
	if err != nil {
		return Observation{}, err
	}
	return m.d.observation(vars, status), nil
}

// parseObserveOutput reads the client's batch output of observeSQL: a header and a row of
// the variables, then, when a replica source is configured, a header and a row of SHOW
// REPLICA STATUS (an empty result prints nothing).
func parseObserveOutput(out string) (vars, status map[string]string, err error) {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) < 2 {
		return nil, nil, fmt.Errorf("unexpected answer %q", truncate(out, 200))
	}
	if vars, err = batchRow(lines[0], lines[1]); err != nil {
		return nil, nil, err
	}
	status = map[string]string{}
	if len(lines) >= 4 {
		if status, err = batchRow(lines[2], lines[3]); err != nil {
			return nil, nil, err
		}
	}
	return vars, status, nil
}

// batchRow pairs a header line with a row line of the client's batch output, undoing its
// escapes.
func batchRow(header, row string) (map[string]string, error) {
	names, values := strings.Split(header, "\t"), strings.Split(row, "\t")
	if len(names) != len(values) {
		return nil, fmt.Errorf("unexpected answer: %d columns, %d values", len(names), len(values))
	}
	unescape := strings.NewReplacer(`\\`, `\`, `\n`, "\n", `\t`, "\t", `\0`, "\x00")
	m := make(map[string]string, len(names))
	for i, n := range names {
		m[n] = unescape.Replace(values[i])
	}
	return m, nil
}

// observation makes an Observation of the variables and the replica status.
//
// Sequence on MariaDB is the sequence number of replication domain 0, the only one
// Mooring's servers write (gtid_domain_id is left at 0): of gtid_binlog_pos on the
// primary, of gtid_slave_pos (what replication applied) on a replica. With
// gtid_strict_mode the domain's numbers only grow, whichever server wrote them. On MySQL
// it is the highest transaction number of the primary's server_uuid in gtid_executed
// (the replica learns that UUID from its source); nil until a replica has connected.
func (d *dialect) observation(vars, status map[string]string) Observation {
	o := Observation{Role: RolePrimary}
	if host := column(status, d.sourceHost); vars["read_only"] == "1" || (host != "" && host != "NULL") {
		o.Role = RoleReplica
	}
	if len(status) > 0 {
		o.Streaming = column(status, d.ioRunning) == "Yes" && column(status, d.sqlRunning) == "Yes"
		var errs []string
		for _, k := range []string{"Last_IO_Error", "Last_SQL_Error"} {
			if e := strings.TrimSpace(status[k]); e != "" {
				errs = append(errs, e)
			}
		}
		o.ReplicationError = truncate(strings.Join(errs, "; "), maxReplicationError)
	}
	if d.mysql {
		o.Position = strings.Join(strings.Fields(vars["gtid_executed"]), "")
		uuid := vars["server_uuid"]
		if o.Role == RoleReplica {
			uuid = status["Source_UUID"]
		}
		if n, ok := mysqlSequence(o.Position, uuid); ok {
			o.Sequence = &n
		}
		return o
	}
	o.Position = vars["binlog_pos"]
	if o.Role == RoleReplica {
		o.Position = vars["slave_pos"]
	}
	if n, ok := mariadbSequence(o.Position); ok {
		o.Sequence = &n
	}
	return o
}

// column is the value of the first of names the row has.
func column(row map[string]string, names []string) string {
	for _, n := range names {
		if v, ok := row[n]; ok {
			return v
		}
	}
	return ""
}

// mariadbSequence is the highest sequence number of domain 0 in a MariaDB GTID position
// ("0-1-42,1-3-7"); 0 when the domain has none yet (nothing was written).
func mariadbSequence(pos string) (int64, bool) {
	var seq int64
	for _, g := range strings.Split(pos, ",") {
		g = strings.TrimSpace(g)
		if g == "" {
			continue
		}
		f := strings.Split(g, "-")
		if len(f) != 3 {
			return 0, false
		}
		n, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			return 0, false
		}
		if f[0] == "0" {
			seq = max(seq, n)
		}
	}
	return seq, true
}

// mysqlSequence is the highest transaction number of uuid's untagged GTIDs in a MySQL
// GTID set ("3e11fa47-...:1-5:7-9,0e2d...:1-3"; a tag, "uuid:tag:1-4", starts GTIDs of
// their own). 0 when the set has none of uuid's; false without a uuid.
func mysqlSequence(set, uuid string) (int64, bool) {
	if uuid == "" {
		return 0, false
	}
	var seq int64
	for _, part := range strings.Split(set, ",") {
		f := strings.Split(strings.TrimSpace(part), ":")
		if !strings.EqualFold(f[0], uuid) {
			continue
		}
		for _, iv := range f[1:] {
			end := iv
			if i := strings.IndexByte(iv, '-'); i >= 0 {
				end = iv[i+1:]
			}
			n, err := strconv.ParseInt(end, 10, 64)
			if err != nil {
				break // a tag: the rest are its GTIDs
			}
			seq = max(seq, n)
		}
	}
	return seq, true
}

// truncate caps s at n bytes, on a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}
