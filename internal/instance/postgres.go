package instance

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
)

// postgres drives PostgreSQL: initdb on the primary, pg_basebackup with a replication
// slot per replica, standby.signal and primary_conninfo written here rather than by
// pg_basebackup -R, so every start rewrites them from the pod's configuration.
type postgres struct {
	cfg Config
	// bin is the directory of the server's binaries, found by Check.
	bin string
	// major is the binaries' major version.
	major string
}

func newPostgres(c Config) *postgres { return &postgres{cfg: c} }

const (
	pgSuperuser = "postgres"
	// pgConfFile is the configuration Mooring owns, included from postgresql.conf.
	pgConfFile = "mooring.conf"
)

func (p *postgres) pgdata() string          { return filepath.Join(p.cfg.DataDir, "pgdata") }
func (p *postgres) socketDir() string       { return filepath.Join(p.cfg.RunDir, "pg") }
func (p *postgres) passfile() string        { return filepath.Join(p.cfg.RunDir, "pgpass") }
func (p *postgres) tool(name string) string { return filepath.Join(p.bin, name) }

// slotName is the replication slot of the replica with the pod's name: slot names allow
// lower-case letters, digits and underscores.
func slotName(pod string) string {
	return strings.NewReplacer("-", "_", ".", "_").Replace(pod)
}

var pgVersionRE = regexp.MustCompile(`\(PostgreSQL\) (\d+)(?:\.(\d+))?`)

// Check finds the binaries the way an image may carry them: on PATH (the official
// image) or at Debian's /usr/lib/postgresql/<major>/bin; then compares the data
// directory's major version with theirs.
func (p *postgres) Check(ctx context.Context) error {
	major := strings.SplitN(p.cfg.Version, ".", 2)[0]
	var dirs []string
	if path, err := exec.LookPath("postgres"); err == nil {
		// Through links (/usr/local/bin/postgres -> /usr/lib/postgresql/15/bin/postgres),
		// to the directory with the other tools.
		if resolved, err := filepath.EvalSymlinks(path); err == nil {
			path = resolved
		}
		dirs = append(dirs, filepath.Dir(path))
	}
	dirs = append(dirs, filepath.Join("/usr/lib/postgresql", major, "bin"))
	p.bin = ""
	for _, d := range dirs {
		if isExecutable(filepath.Join(d, "postgres")) && isExecutable(filepath.Join(d, "initdb")) {
			p.bin = d
			break
		}
	}
	if p.bin == "" {
		return faultf(FaultMissingBinaries, "the image has no PostgreSQL server: looked for postgres and initdb on PATH and in /usr/lib/postgresql/%s/bin; run an image with the PostgreSQL %s server (docker.io/library/postgres:%s)", major, major, major)
	}
	for _, t := range []string{"pg_basebackup", "psql", "pg_isready"} {
		if !isExecutable(p.tool(t)) {
			return faultf(FaultMissingBinaries, "the image's PostgreSQL in %s has no %s, which Mooring needs", p.bin, t)
		}
	}
	out, err := run(exec.CommandContext(ctx, p.tool("postgres"), "--version"))
	if err != nil {
		return faultf(FaultMissingBinaries, "%s --version failed: %v", p.tool("postgres"), err)
	}
	m := pgVersionRE.FindStringSubmatch(out)
	if m == nil {
		return faultf(FaultMissingBinaries, "cannot tell the PostgreSQL version from %q", strings.TrimSpace(out))
	}
	p.major = m[1]
	if p.major != major {
		return faultf(FaultVersionMismatch, "spec.version is %s and the image runs PostgreSQL %s: Mooring initialises and runs only the version the cluster names; run the PostgreSQL %s image", p.cfg.Version, p.major, major)
	}
	if b, err := os.ReadFile(filepath.Join(p.pgdata(), "PG_VERSION")); err == nil {
		if data := strings.TrimSpace(string(b)); data != p.major {
			return faultf(FaultVersionMismatch, "the data directory was initialised by PostgreSQL %s and this image runs PostgreSQL %s, which cannot use it; set spec.version back to %s (to move to %s, restore a Backup into a new cluster). The data directory is left as it is",
				data, p.major, data, p.major)
		}
		return nil
	}
	return unknownData(p.cfg.DataDir, "pgdata")
}

// unknownData refuses a volume that holds something other than what Mooring makes: a
// data directory of the Bitnami images, say. Initialising beside it would hide the
// owner's data behind an empty database.
func unknownData(dir, ours string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil // no volume yet: nothing to protect
	}
	var others []string
	for _, e := range entries {
		name := e.Name()
		if name == "lost+found" || name == ours || strings.HasPrefix(name, ours+".") {
			continue
		}
		others = append(others, name)
	}
	if len(others) == 0 {
		return nil
	}
	return faultf(FaultUnknownData, "the data volume holds files Mooring did not create (%s), such as a data directory of the Bitnami images; Mooring does not initialise over them. Back the data up and restore it into a new cluster (docs/databases.md, \"Clusters made before the instance manager\")",
		strings.Join(others[:min(len(others), 5)], ", "))
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

func (p *postgres) Initialised() bool {
	_, err := os.Stat(filepath.Join(p.pgdata(), "PG_VERSION"))
	return err == nil
}

// Initialise runs initdb (primary) or pg_basebackup (replica) into a temporary directory
// and renames it into place.
func (p *postgres) Initialise(ctx context.Context) error {
	if p.cfg.Role() == RolePrimary {
		return p.initdb(ctx)
	}
	return p.clone(ctx)
}

func (p *postgres) initdb(ctx context.Context) error {
	tmp := p.pgdata() + ".init"
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	// The superuser's password comes from the mounted Secret's file (initdb reads its
	// first line); connections over the private socket are trusted (as CloudNativePG's
	// peer map does for the postgres user), every network connection needs SCRAM.
	cmd := exec.CommandContext(ctx, p.tool("initdb"), "--pgdata="+tmp, "--username="+pgSuperuser,
		"--pwfile="+filepath.Join(p.cfg.AdminSecretDir, "password"), "--auth-local=trust", "--auth-host=scram-sha-256",
		"--encoding=UTF8", "--locale=C.UTF-8", "--no-instructions")
	if _, err := run(cmd); err != nil {
		return faultf(FaultInitFailed, "initdb failed: %v", err)
	}
	return os.Rename(tmp, p.pgdata())
}

// clone copies the primary with pg_basebackup through the replica's slot, retrying
// until the primary answers (it may still be starting).
func (p *postgres) clone(ctx context.Context) error {
	if _, err := installTLS(p.cfg); err != nil {
		return err
	}
	if err := p.writePassfile(); err != nil {
		return err
	}
	if err := p.ensureSlot(ctx); err != nil {
		return faultf(FaultCloneFailed, "cannot create replication slot %s on the primary %s: %v", slotName(p.cfg.Pod), p.cfg.PrimaryHost, err)
	}
	tmp := p.pgdata() + ".clone"
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, p.tool("pg_basebackup"), "--pgdata="+tmp, "--host="+p.cfg.PrimaryHost,
		"--port="+strconv.Itoa(p.cfg.PrimaryPort), "--username="+ReplicationUser, "--no-password",
		"--wal-method=stream", "--slot="+slotName(p.cfg.Pod), "--checkpoint=fast")
	cmd.Env = p.env()
	if _, err := run(cmd); err != nil {
		_ = os.RemoveAll(tmp)
		return faultf(FaultCloneFailed, "cloning the primary %s failed: %v", p.cfg.PrimaryHost, err)
	}
	return os.Rename(tmp, p.pgdata())
}

// env is the tools' environment: the password file for the replication user, no psqlrc,
// and with TLS the primary verified against the cluster's CA (pg_basebackup).
func (p *postgres) env() []string {
	env := append(os.Environ(), "PGPASSFILE="+p.passfile(), "PGCONNECT_TIMEOUT=5", "PSQLRC=/dev/null")
	if p.cfg.TLS() {
		env = append(env, "PGSSLMODE=verify-full", "PGSSLROOTCERT="+p.cfg.tlsFiles().ca)
	}
	return env
}

// writePassfile writes the replication user's password where libpq finds it, readable by
// this user only.
func (p *postgres) writePassfile() error {
	pw, err := p.cfg.ReplicationPassword()
	if err != nil {
		return err
	}
	esc := strings.NewReplacer(`\`, `\\`, `:`, `\:`).Replace(pw)
	return os.WriteFile(p.passfile(), []byte("*:*:*:"+ReplicationUser+":"+esc+"\n"), 0o600)
}

// ensureSlot creates the replica's physical slot on the primary over a replication
// connection (the replication user may not run SQL); one that exists is kept.
func (p *postgres) ensureSlot(ctx context.Context) error {
	conn := fmt.Sprintf("host=%s port=%d user=%s replication=true %s", p.cfg.PrimaryHost, p.cfg.PrimaryPort, ReplicationUser, pgSSLParams(p.cfg))
	cmd := exec.CommandContext(ctx, p.tool("psql"), "--no-psqlrc", "--no-password", "--quiet", conn,
		"--command=CREATE_REPLICATION_SLOT "+slotName(p.cfg.Pod)+" PHYSICAL RESERVE_WAL")
	cmd.Env = p.env()
	out, err := run(cmd)
	if err != nil && strings.Contains(out, "already exists") {
		return nil
	}
	return err
}

// Configure writes pg_hba.conf and mooring.conf, includes the latter from
// postgresql.conf once, and sets the role's signal file.
func (p *postgres) Configure(context.Context) error {
	if err := os.MkdirAll(p.socketDir(), 0o700); err != nil {
		return err
	}
	// The kubelet's fsGroup handling may have opened the directory to the group;
	// PostgreSQL refuses to start on a directory others can write.
	if err := os.Chmod(p.pgdata(), 0o700); err != nil {
		return err
	}
	if _, err := installTLS(p.cfg); err != nil {
		return err
	}
	hba := pgHBA(p.cfg.TLS(), p.cfg.SuperuserAccess)
	if err := os.WriteFile(filepath.Join(p.pgdata(), "pg_hba.conf"), []byte(hba), 0o600); err != nil {
		return err
	}
	conf := []string{
		"# Written by Mooring at every start; postgresql.conf includes it last.",
		"listen_addresses = '*'",
		"port = " + strconv.Itoa(p.cfg.Port),
		"unix_socket_directories = '" + p.socketDir() + "'",
		"password_encryption = 'scram-sha-256'",
		"wal_level = replica",
		"max_wal_senders = 10",
		"max_replication_slots = 10",
		"hot_standby = on",
		"hot_standby_feedback = on",
		"wal_log_hints = on",
		"logging_collector = off",
		"log_destination = 'stderr'",
	}
	// Memory follows the container's limit (memory.go).
	conf = append(conf, MemorySettings(p.cfg.Engine, p.cfg.MemoryLimit)...)
	if p.cfg.TLS() {
		conf = append(conf, pgTLSConf(p.cfg.tlsFiles())...)
	}
	signal := filepath.Join(p.pgdata(), "standby.signal")
	if p.cfg.Role() == RoleReplica {
		if err := p.writePassfile(); err != nil {
			return err
		}
		conf = append(conf,
			fmt.Sprintf("primary_conninfo = 'host=%s port=%d user=%s passfile=%s application_name=%s %s connect_timeout=5'",
				p.cfg.PrimaryHost, p.cfg.PrimaryPort, ReplicationUser, p.passfile(), slotName(p.cfg.Pod), pgSSLParams(p.cfg)),
			"primary_slot_name = '"+slotName(p.cfg.Pod)+"'")
		if err := os.WriteFile(signal, nil, 0o600); err != nil {
			return err
		}
	} else if err := os.Remove(signal); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := os.WriteFile(filepath.Join(p.pgdata(), pgConfFile), []byte(strings.Join(conf, "\n")+"\n"), 0o600); err != nil {
		return err
	}
	main := filepath.Join(p.pgdata(), "postgresql.conf")
	b, err := os.ReadFile(main)
	if err != nil {
		return err
	}
	include := "include_if_exists = '" + pgConfFile + "'"
	if !strings.Contains(string(b), include) {
		f, err := os.OpenFile(main, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		_, err = f.WriteString("\n# Mooring's settings, last so they win.\n" + include + "\n")
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	}
	return nil
}

func (p *postgres) Server() *exec.Cmd {
	return exec.Command(p.tool("postgres"), "-D", p.pgdata())
}

// StopSignal is SIGINT: PostgreSQL's fast shutdown (SIGTERM waits for clients to leave).
func (p *postgres) StopSignal() os.Signal { return syscall.SIGINT }

func (p *postgres) Ready(ctx context.Context) error {
	cmd := exec.CommandContext(ctx, p.tool("pg_isready"), "--host="+p.socketDir(), "--port="+strconv.Itoa(p.cfg.Port),
		"--username="+pgSuperuser, "--dbname=postgres", "--timeout=3", "--quiet")
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("PostgreSQL does not accept connections yet (pg_isready: %w)", err)
	}
	return nil
}

// psql runs sql as the superuser over the private socket and returns its unaligned,
// tuples-only output. The SQL goes through standard input, never the arguments.
func (p *postgres) psql(ctx context.Context, sql string) (string, error) {
	cmd := exec.CommandContext(ctx, p.tool("psql"), "--no-psqlrc", "--no-password", "--quiet", "--tuples-only",
		"--no-align", "--set=ON_ERROR_STOP=1", "--host="+p.socketDir(), "--port="+strconv.Itoa(p.cfg.Port),
		"--username="+pgSuperuser, "--dbname=postgres")
	cmd.Env = p.env()
	cmd.Stdin = strings.NewReader(sql)
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", fmt.Errorf("psql: %w: %s", err, lastLines(string(ee.Stderr), 3))
		}
		return "", fmt.Errorf("psql: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// quietSQL keeps the session's statements, which may carry a password, out of the
// server's log whatever log_statement says.
const quietSQL = "SET log_statement = 'none';\nSET log_min_duration_statement = -1;\nSET log_min_error_statement = 'panic';\n"

func pgLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
func pgIdent(s string) string   { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// AfterStart makes sure, on the primary, of the replication user with its own password,
// and of the application user with the credentials Secret's password (and, when it is
// created, its rights); on a replica, that its slot exists on the primary. The passwords
// are set over the private socket, at every start and whenever a mounted Secret changes
// (Refresh): they never cross the network, and the WAL carries only their SCRAM hashes.
func (p *postgres) AfterStart(ctx context.Context) error {
	if p.cfg.Role() == RoleReplica {
		return p.ensureSlot(ctx)
	}
	replication, err := p.cfg.ReplicationPassword()
	if err != nil {
		return err
	}
	user, password, err := p.cfg.AppCredentials()
	if err != nil {
		return err
	}
	if err := refuseReserved(p.cfg.Engine, user); err != nil {
		return err
	}
	out, err := p.psql(ctx, "SELECT rolname FROM pg_roles WHERE rolname IN ("+pgLiteral(ReplicationUser)+", "+pgLiteral(user)+");\n")
	if err != nil {
		return err
	}
	have := map[string]bool{}
	for _, l := range strings.Split(out, "\n") {
		have[strings.TrimSpace(l)] = true
	}
	sql := quietSQL
	if !have[ReplicationUser] {
		sql += "CREATE ROLE " + pgIdent(ReplicationUser) + " WITH REPLICATION LOGIN;\n"
	}
	sql += "ALTER ROLE " + pgIdent(ReplicationUser) + " WITH PASSWORD " + pgLiteral(replication) + ";\n"
	if !have[user] {
		sql += "CREATE ROLE " + pgIdent(user) + " WITH LOGIN PASSWORD " + pgLiteral(password) + ";\n" +
			"GRANT ALL ON DATABASE postgres TO " + pgIdent(user) + ";\n" +
			"GRANT ALL ON SCHEMA public TO " + pgIdent(user) + ";\n"
	} else {
		sql += "ALTER ROLE " + pgIdent(user) + " WITH PASSWORD " + pgLiteral(password) + ";\n"
	}
	_, err = p.psql(ctx, sql)
	return err
}

// Observe asks the server whether it is in recovery and how far its WAL goes.
func (p *postgres) Observe(ctx context.Context) (Observation, error) {
	out, err := p.psql(ctx, `SELECT pg_is_in_recovery(),
  coalesce(CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() ELSE pg_current_wal_lsn() END, '0/0'::pg_lsn)::text,
  (coalesce(CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() ELSE pg_current_wal_lsn() END, '0/0'::pg_lsn) - '0/0'::pg_lsn)::bigint,
  coalesce((SELECT status FROM pg_stat_wal_receiver), '');`)
	if err != nil {
		return Observation{}, err
	}
	f := strings.Split(out, "|")
	if len(f) != 4 {
		return Observation{}, fmt.Errorf("unexpected answer %q", out)
	}
	o := Observation{Role: RolePrimary, Position: f[1], Streaming: f[3] == "streaming"}
	if f[0] == "t" {
		o.Role = RoleReplica
	}
	if n, err := strconv.ParseInt(f[2], 10, 64); err == nil {
		o.Sequence = &n
	}
	return o, nil
}

// Refresh applies what changed in the mounted Secrets without a restart: the
// certificates (copied, then read by a reload), the replica's password file (read at the
// next connection to the primary), and on the primary the users' passwords.
func (p *postgres) Refresh(ctx context.Context) error {
	if _, err := installTLS(p.cfg); err != nil {
		return err
	}
	if p.cfg.Role() == RoleReplica {
		if err := p.writePassfile(); err != nil {
			return err
		}
	}
	if _, err := p.psql(ctx, "SELECT pg_reload_conf();"); err != nil {
		return err
	}
	if p.cfg.Role() == RoleReplica {
		return nil // its slot exists; the passwords are the primary's to set
	}
	return p.AfterStart(ctx)
}
