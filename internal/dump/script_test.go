package dump

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mooringhq/mooring/internal/testutil/dbserver"
)

// The scripts run for real here, against a PostgreSQL server the test starts, so that the
// gzip output, the file names and the retention are proven rather than assumed.

const testPassword = "s3cret-Pa55word"

var dumpName = regexp.MustCompile(`^[0-9]{8}T[0-9]{6}Z\.sql\.gz$`)

func TestBackupScriptAgainstPostgreSQL(t *testing.T) {
	pg := dbserver.StartPostgreSQL(t, "superuser-pw")
	pg.Psql(t, "postgres", `CREATE ROLE app LOGIN PASSWORD '`+testPassword+`'`)
	pg.Psql(t, "postgres", `CREATE DATABASE shop OWNER app`)
	pg.Psql(t, "shop", `SET ROLE app; CREATE TABLE orders (id int PRIMARY KEY, item text);
		INSERT INTO orders VALUES (1, 'anchor-chain'), (2, 'bollard')`)

	dir := filepath.Join(t.TempDir(), "volume", "backups")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// Older dumps of the schedule, a final snapshot and a file that is not Mooring's.
	for _, f := range []string{"20200101T000000Z.sql.gz", "20210101T000000Z.sql.gz", "20220101T000000Z.sql.gz",
		"final-snapshot-orders-20190101T000000Z.sql.gz", "README.txt"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("old"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	env := []string{
		"DB_ENGINE=postgresql", "DB_HOST=127.0.0.1", "DB_PORT=" + strconv.Itoa(pg.Port), "DB_USER=app",
		"DB_NAME=shop", "PGPASSWORD=" + testPassword, "BACKUP_DIR=" + dir, "KEEP_LAST=2",
	}

	out := runScript(t, BackupScript, pg.BinDir, env)
	first := newDumps(t, dir, nil)
	if len(first) != 1 {
		t.Fatalf("want one new dump, got %v; output:\n%s", first, out)
	}
	sql := gunzip(t, filepath.Join(dir, first[0]))
	for _, want := range []string{"CREATE TABLE public.orders", "anchor-chain", "bollard"} {
		if !strings.Contains(sql, want) {
			t.Errorf("dump %s does not contain %q:\n%s", first[0], want, sql)
		}
	}
	assertFiles(t, dir, append([]string{"20220101T000000Z.sql.gz", "final-snapshot-orders-20190101T000000Z.sql.gz", "README.txt"}, first...))

	// A second dump, likely in the same second: it must get a name of its own, and the
	// retention keeps exactly the two newest dumps of the schedule.
	out = runScript(t, BackupScript, pg.BinDir, env)
	second := newDumps(t, dir, first)
	if len(second) != 1 || second[0] <= first[0] {
		t.Fatalf("second run: new dumps %v after %v; output:\n%s", second, first, out)
	}
	assertFiles(t, dir, []string{first[0], second[0], "final-snapshot-orders-20190101T000000Z.sql.gz", "README.txt"})
	if strings.Contains(out, testPassword) {
		t.Fatal("the script printed the password")
	}

	// A final snapshot: prefixed, never pruned, nothing else pruned either.
	snapEnv := append(env[:len(env)-1:len(env)-1], "KEEP_LAST=0", "DUMP_PREFIX=final-snapshot-shop-")
	runScript(t, BackupScript, pg.BinDir, snapEnv)
	snaps := 0
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "final-snapshot-shop-") {
			snaps++
			if !strings.Contains(gunzip(t, filepath.Join(dir, e.Name())), "anchor-chain") {
				t.Errorf("final snapshot %s lacks the data", e.Name())
			}
		}
	}
	if snaps != 1 || len(entries) != 5 {
		t.Errorf("after a final snapshot: %v", names(entries))
	}

	// A failing dump (wrong password) fails the Job, leaves no file behind, prunes nothing.
	before := listDir(t, dir)
	bad := append(env[:len(env):len(env)], "PGPASSWORD=wrong")
	cmd := scriptCommand(BackupScript, pg.BinDir, bad)
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Fatalf("the script succeeded with a wrong password:\n%s", out)
	} else if !strings.Contains(string(out), "failed") || strings.Contains(string(out), "wrong") {
		t.Errorf("failure output does not say the dump failed, or shows the password:\n%s", out)
	}
	if after := listDir(t, dir); strings.Join(after, ",") != strings.Join(before, ",") {
		t.Errorf("a failed dump changed the directory: %v -> %v", before, after)
	}

	// Cleanup removes every dump, final snapshots included, and nothing else.
	runScript(t, CleanupScript, pg.BinDir, []string{"BACKUP_DIR=" + dir})
	assertFiles(t, dir, []string{"README.txt"})
	if err := os.Remove(filepath.Join(dir, "README.txt")); err != nil {
		t.Fatal(err)
	}
	runScript(t, BackupScript, pg.BinDir, env)
	runScript(t, CleanupScript, pg.BinDir, []string{"BACKUP_DIR=" + dir})
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("cleanup left the emptied directory %s: %v", dir, err)
	}
}

// scriptCommand runs a script the way the Job does, sh -c with only the given environment
// (and the server's client binaries first on PATH).
func scriptCommand(script, binDir string, env []string) *exec.Cmd {
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Env = append([]string{"PATH=" + binDir + ":/usr/bin:/bin", "HOME=" + os.TempDir()}, env...)
	return cmd
}

func runScript(t *testing.T, script, binDir string, env []string) string {
	t.Helper()
	start := time.Now()
	out, err := scriptCommand(script, binDir, env).CombinedOutput()
	if err != nil {
		t.Fatalf("script failed: %v\n%s", err, out)
	}
	t.Logf("script ran in %s:\n%s", time.Since(start).Round(time.Millisecond), out)
	return string(out)
}

// newDumps lists the <timestamp>.sql.gz dumps newer than 2023 that are not in known.
func newDumps(t *testing.T, dir string, known []string) []string {
	t.Helper()
	var out []string
	for _, n := range listDir(t, dir) {
		if dumpName.MatchString(n) && n > "2023" && !contains(known, n) {
			out = append(out, n)
		}
	}
	return out
}

func assertFiles(t *testing.T, dir string, want []string) {
	t.Helper()
	sort.Strings(want)
	if got := listDir(t, dir); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("files in %s:\n got  %v\n want %v", dir, got, want)
	}
}

func listDir(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return names(entries)
}

func names(entries []os.DirEntry) []string {
	out := make([]string, 0, len(entries))
	for _, e := range entries {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out
}

func gunzip(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("%s is not gzip: %v", path, err)
	}
	sql, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return string(sql)
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// No MySQL server here: a stand-in mysqldump (and mariadb-dump, for machines without
// MariaDB) checks what the script gives the real one, the password only through
// MYSQL_PWD and never among the arguments, and only options the tool has: given one it
// does not know (--connect-timeout, --set-gtid-purged to mariadb-dump), the real tool
// refuses to start.
func TestBackupScriptMySQLInvocation(t *testing.T) {
	for _, c := range []struct {
		engine, tool string
		want, never  []string
	}{
		{"mysql", "mysqldump", []string{"--set-gtid-purged=OFF"}, nil},
		{"mariadb", "mariadb-dump", nil, []string{"--set-gtid-purged"}},
	} {
		t.Run(c.engine, func(t *testing.T) {
			bin := t.TempDir()
			fake := `#!/bin/sh
case "$*" in *"$MYSQL_PWD"*) echo "password on the command line" >&2; exit 3 ;; esac
[ "$MYSQL_PWD" = "` + testPassword + `" ] || { echo "no MYSQL_PWD" >&2; exit 4; }
echo "-- dumped with: $*"
[ -z "$FAIL" ]
`
			if err := os.WriteFile(filepath.Join(bin, c.tool), []byte(fake), 0o755); err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(t.TempDir(), "backups")
			env := []string{"DB_ENGINE=" + c.engine, "DB_HOST=inventory.shop.svc", "DB_PORT=3306", "DB_USER=app",
				"MYSQL_PWD=" + testPassword, "BACKUP_DIR=" + dir, "KEEP_LAST=1"}
			runScript(t, BackupScript, bin, env)
			dumps := newDumps(t, dir, nil)
			if len(dumps) != 1 {
				t.Fatalf("dumps %v", dumps)
			}
			got := gunzip(t, filepath.Join(dir, dumps[0]))
			for _, want := range append([]string{"--host=inventory.shop.svc", "--port=3306", "--user=app", "--single-transaction",
				"--no-tablespaces", "--routines", "--all-databases"}, c.want...) {
				if !strings.Contains(got, want) {
					t.Errorf("%s was not given %s: %s", c.tool, want, got)
				}
			}
			for _, never := range append([]string{"--connect-timeout"}, c.never...) {
				if strings.Contains(got, never) {
					t.Errorf("%s was given %s, which it does not have: %s", c.tool, never, got)
				}
			}
			// A failing dump fails the script even though gzip, last in the pipe, succeeds.
			out, err := scriptCommand(BackupScript, bin, append(env, "FAIL=1")).CombinedOutput()
			if err == nil {
				t.Fatalf("the script succeeded although %s failed:\n%s", c.tool, out)
			}
			if after := newDumps(t, dir, nil); len(after) != 1 || after[0] != dumps[0] {
				t.Errorf("a failed dump changed the dumps: %v -> %v", dumps, after)
			}
		})
	}
}

// Backups that share a volume and a directory (spec.storage.existingClaim) each name their
// dumps after themselves: retention prunes, and cleanup removes, only the Backup's own.
// "orders" is a prefix of "orders-eu", and neither touches the other's dumps, a final
// snapshot or a dump written before dumps carried their Backup's name.
func TestBackupsSharingADirectory(t *testing.T) {
	bin := t.TempDir()
	fake := "#!/bin/sh\necho \"-- dumped with: $*\"\n"
	if err := os.WriteFile(filepath.Join(bin, "mysqldump"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "backups")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	others := []string{"orders-eu-20200101T000000Z.sql.gz", "orders-eu-20210101T000000Z.sql.gz", "orders-eu-20220101T000000Z.sql.gz",
		".orders-eu-20230101T000000Z.sql.gz.partial", "20190101T000000Z.sql.gz", "final-snapshot-orders-20190101T000000Z.sql.gz", "README.txt"}
	for _, f := range append([]string{"orders-20200101T000000Z.sql.gz", "orders-20210101T000000Z.sql.gz"}, others...) {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("old"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	env := []string{"DB_ENGINE=mysql", "DB_HOST=inventory.shop.svc", "DB_PORT=3306", "DB_USER=app",
		"MYSQL_PWD=" + testPassword, "BACKUP_DIR=" + dir, "KEEP_LAST=2", "DUMP_OWNER=orders"}
	out := runScript(t, BackupScript, bin, env)

	own := regexp.MustCompile(`^orders-[0-9]{8}T[0-9]{6}Z\.sql\.gz$`)
	var fresh []string
	for _, n := range listDir(t, dir) {
		if own.MatchString(n) && n > "orders-2023" {
			fresh = append(fresh, n)
		}
	}
	if len(fresh) != 1 {
		t.Fatalf("want one new dump orders-<timestamp>.sql.gz, got %v in %v; output:\n%s", fresh, listDir(t, dir), out)
	}
	// KEEP_LAST=2 of orders' own: the new dump and orders-2021; orders-eu keeps its three.
	assertFiles(t, dir, append([]string{fresh[0], "orders-20210101T000000Z.sql.gz"}, others...))

	runScript(t, CleanupScript, bin, []string{"BACKUP_DIR=" + dir, "DUMP_OWNER=orders"})
	assertFiles(t, dir, others)

	runScript(t, CleanupScript, bin, []string{"BACKUP_DIR=" + dir, "DUMP_OWNER=orders-eu"})
	assertFiles(t, dir, []string{"20190101T000000Z.sql.gz", "final-snapshot-orders-20190101T000000Z.sql.gz", "README.txt"})
}

// The cleanup reports what it leaves in the whole volume: Mooring deletes a volume it made
// for a Backup only when nothing that is not the Backup's is left in it. A final snapshot
// written into the Backup's directory, or a file elsewhere in the volume, is reported;
// the filesystem's lost+found and empty directories are not.
func TestCleanupReportsWhatItLeaves(t *testing.T) {
	root := filepath.Join(t.TempDir(), "volume")
	dir := filepath.Join(root, "backups")
	for _, d := range []string{dir, filepath.Join(root, "lost+found"), filepath.Join(root, "empty")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(path string) {
		t.Helper()
		if err := os.WriteFile(path, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"orders-20200101T000000Z.sql.gz", ".orders-20210101T000000Z.sql.gz.partial",
		"final-snapshot-shop-20220101T000000Z.sql.gz"} {
		write(filepath.Join(dir, f))
	}
	write(filepath.Join(root, "lost+found", "#1234"))
	reportFile := filepath.Join(t.TempDir(), "termination-log")
	env := []string{"BACKUP_DIR=" + dir, "DUMP_OWNER=orders", "VOLUME_ROOT=" + root, "REPORT_FILE=" + reportFile}
	readReport := func() string {
		t.Helper()
		b, err := os.ReadFile(reportFile)
		if err != nil {
			t.Fatalf("no report: %v", err)
		}
		return string(b)
	}

	out := runScript(t, CleanupScript, "", env)
	assertFiles(t, dir, []string{"final-snapshot-shop-20220101T000000Z.sql.gz"})
	if got, want := readReport(), "foreign=1\nbackups/final-snapshot-shop-20220101T000000Z.sql.gz\n"; got != want {
		t.Errorf("report with a final snapshot left:\n got  %q\n want %q\noutput:\n%s", got, want, out)
	}

	// The snapshot moved elsewhere in the volume is still in it.
	if err := os.Rename(filepath.Join(dir, "final-snapshot-shop-20220101T000000Z.sql.gz"), filepath.Join(root, "empty", "copied.sql.gz")); err != nil {
		t.Fatal(err)
	}
	runScript(t, CleanupScript, "", env)
	if got, want := readReport(), "foreign=1\nempty/copied.sql.gz\n"; got != want {
		t.Errorf("report with a file elsewhere in the volume:\n got  %q\n want %q", got, want)
	}

	if err := os.Remove(filepath.Join(root, "empty", "copied.sql.gz")); err != nil {
		t.Fatal(err)
	}
	runScript(t, CleanupScript, "", env)
	if got := readReport(); got != "foreign=0\n" {
		t.Errorf("report of an emptied volume: %q, want foreign=0", got)
	}
}

// restoreResult is one run of the restore script: its output, exit status and report.
type restoreResult struct {
	out    string
	code   int
	report string
}

// runRestore runs RestoreScript with env, with its report written to a file of its own.
func runRestore(t *testing.T, binDir string, env []string) restoreResult {
	t.Helper()
	report := filepath.Join(t.TempDir(), "termination-log")
	cmd := scriptCommand(RestoreScript, binDir, append(env[:len(env):len(env)], "REPORT_FILE="+report))
	cmd.Dir = os.TempDir()
	out, err := cmd.CombinedOutput()
	r := restoreResult{out: string(out)}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		r.code = exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(report)
	r.report = string(b)
	t.Logf("restore exit status %d:\n%s", r.code, out)
	return r
}

// expectFailure checks a restore failed with the cause's exit status and said so in one
// line, naming the file, on its output and in its report.
func (r restoreResult) expectFailure(t *testing.T, code int32, cause, file string) {
	t.Helper()
	want := "restore: " + file + ": " + cause
	if r.code != int(code) || !strings.HasPrefix(r.out, want) || strings.Count(strings.TrimSpace(r.out), "\n") != 0 || r.report != r.out {
		t.Errorf("want exit status %d and one line %q..., got %d:\n%s\nreport: %q", code, want, r.code, r.out, r.report)
	}
}

// sha256File is what the restore script reports for a file.
func sha256File(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// writeGzip writes text, gzipped, to dir/name.
func writeGzip(t *testing.T, dir, name, text string) string {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write([]byte(text)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// A dump made by the backup script, restored by the restore script into the emptied
// database, gives the same rows; a restore that cannot load changes nothing and says why
// in one line.
func TestRestoreScriptAgainstPostgreSQL(t *testing.T) {
	pg := dbserver.StartPostgreSQL(t, "superuser-pw")
	pg.Psql(t, "postgres", `CREATE ROLE app LOGIN PASSWORD '`+testPassword+`'`)
	pg.Psql(t, "postgres", `CREATE DATABASE shop OWNER app`)
	pg.Psql(t, "shop", `SET ROLE app;
		CREATE TABLE orders (id int PRIMARY KEY, item text, note text, placed timestamptz, data bytea);
		INSERT INTO orders VALUES (1, 'anchor-chain', E'it''s "quoted"\\\\ and\nmulti-line', '2025-01-01 03:00:00+00', '\x00ff10'),
			(2, 'bollard', NULL, '2025-02-01 12:30:00+00', NULL), (3, 'Ankerkette ⚓', '', NULL, '\x');
		CREATE VIEW big_orders AS SELECT id, item FROM orders WHERE id > 1;
		CREATE FUNCTION order_count() RETURNS bigint LANGUAGE sql AS 'SELECT count(*) FROM orders';`)
	const rows = `SELECT id, item, coalesce(note, '<null>'), placed, encode(data, 'hex') FROM orders ORDER BY id`
	before := pg.Query(t, "shop", rows) + pg.Query(t, "shop", `SELECT order_count(), (SELECT count(*) FROM big_orders)`)

	dir := filepath.Join(t.TempDir(), "backups")
	runScript(t, BackupScript, pg.BinDir, []string{
		"DB_ENGINE=postgresql", "DB_HOST=127.0.0.1", "DB_PORT=" + strconv.Itoa(pg.Port), "DB_USER=app",
		"DB_NAME=shop", "PGPASSWORD=" + testPassword, "BACKUP_DIR=" + dir, "KEEP_LAST=0", "DUMP_OWNER=nightly",
	})
	dumps := listDir(t, dir)
	if len(dumps) != 1 {
		t.Fatalf("dumps %v", dumps)
	}
	file := filepath.Join(dir, dumps[0])

	// The database as a new cluster has it: there, and empty.
	pg.Psql(t, "postgres", `DROP DATABASE shop`)
	pg.Psql(t, "postgres", `CREATE DATABASE shop OWNER app`)
	env := []string{
		"DB_ENGINE=postgresql", "DB_HOST=127.0.0.1", "DB_PORT=" + strconv.Itoa(pg.Port), "DB_USER=postgres",
		"PGPASSWORD=superuser-pw", "DB_NAME=shop", "RESTORE_FILE=" + file,
	}
	r := runRestore(t, pg.BinDir, env)
	want := "restore: restored " + file + " sha256=" + sha256File(t, file) + " into postgresql at 127.0.0.1:" + strconv.Itoa(pg.Port) + ", database shop\n"
	if r.code != 0 || r.out != want || r.report != want {
		t.Fatalf("restore: exit status %d, output %q, report %q; want %q", r.code, r.out, r.report, want)
	}
	if after := pg.Query(t, "shop", rows) + pg.Query(t, "shop", `SELECT order_count(), (SELECT count(*) FROM big_orders)`); after != before {
		t.Errorf("restored rows differ:\n got  %q\n want %q", after, before)
	}
	if owner := pg.Query(t, "shop", `SELECT tableowner FROM pg_tables WHERE tablename = 'orders'`); owner != "app\n" {
		t.Errorf("restored table owned by %q, want app", owner)
	}

	// Again, into the database that has the tables now: refused, in one transaction, so
	// nothing changed (the row added since stays, nothing is doubled).
	pg.Psql(t, "shop", `INSERT INTO orders (id, item) VALUES (4, 'added after the restore')`)
	again := pg.Query(t, "shop", rows)
	runRestore(t, pg.BinDir, env).expectFailure(t, RestoreSQLError, "SQL error", file)
	if got := pg.Query(t, "shop", rows); got != again {
		t.Errorf("a failed restore changed the database:\n got  %q\n want %q", got, again)
	}

	// A wrong superuser password, a server that is not there.
	bad := append(env[:len(env):len(env)], "PGPASSWORD=wrong-pw")
	r = runRestore(t, pg.BinDir, bad)
	r.expectFailure(t, RestoreCannotConnect, "cannot connect", file)
	noServer := append(env[:len(env):len(env)], "DB_PORT=1")
	runRestore(t, pg.BinDir, noServer).expectFailure(t, RestoreCannotConnect, "cannot connect", file)

	// No file, a file that is not gzip, a gzip cut short, a directory.
	missing := filepath.Join(dir, "nightly-20200101T000000Z.sql.gz")
	runRestore(t, pg.BinDir, append(env[:len(env):len(env)], "RESTORE_FILE="+missing)).expectFailure(t, RestoreFileMissing, "file missing", missing)
	runRestore(t, pg.BinDir, append(env[:len(env):len(env)], "RESTORE_FILE="+dir)).expectFailure(t, RestoreFileMissing, "file missing", dir)
	plain := filepath.Join(dir, "plain.sql.gz")
	if err := os.WriteFile(plain, []byte("CREATE TABLE x (id int);\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	runRestore(t, pg.BinDir, append(env[:len(env):len(env)], "RESTORE_FILE="+plain)).expectFailure(t, RestoreNotGzip, "not gzip", plain)
	whole, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(dir, "cut.sql.gz")
	if err := os.WriteFile(cut, whole[:len(whole)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	runRestore(t, pg.BinDir, append(env[:len(env):len(env)], "RESTORE_FILE="+cut)).expectFailure(t, RestoreNotGzip, "not gzip", cut)
	// An unknown engine is a misconfiguration.
	runRestore(t, pg.BinDir, append(env[:len(env):len(env)], "DB_ENGINE=oracle")).expectFailure(t, RestoreMisconfigured, "misconfigured", file)

	if strings.Contains(r.out, "wrong-pw") || strings.Contains(r.out, "superuser-pw") {
		t.Errorf("the script printed a password:\n%s", r.out)
	}
}

// No MySQL server here: a stand-in mysql client checks what the restore script gives the
// real one (the dump on standard input, the password only through MYSQL_PWD) and answers
// with the errors a real one prints, which the script sorts into causes.
func TestRestoreScriptMySQLInvocation(t *testing.T) {
	bin := t.TempDir()
	got := filepath.Join(bin, "got")
	fake := `#!/bin/sh
case "$*" in *"$MYSQL_PWD"*) echo "password on the command line" >&2; exit 3 ;; esac
[ "$MYSQL_PWD" = "` + testPassword + `" ] || { echo "ERROR 1045 (28000): Access denied for user 'root'@'10.0.0.1' (using password: YES)" >&2; exit 1; }
{ echo "-- args: $*"; cat; } >"` + got + `"
[ -z "$FAIL" ] || { echo "$FAIL" >&2; exit 1; }
`
	if err := os.WriteFile(filepath.Join(bin, "mysql"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := writeGzip(t, dir, "nightly-20250101T030000Z.sql.gz", "CREATE DATABASE IF NOT EXISTS `shop`;\nINSERT INTO t VALUES ('x');\n")
	env := []string{"DB_ENGINE=mysql", "DB_HOST=inventory.shop.svc", "DB_PORT=3306", "DB_USER=root",
		"MYSQL_PWD=" + testPassword, "RESTORE_FILE=" + file}
	r := runRestore(t, bin, env)
	if r.code != 0 || !strings.Contains(r.out, "restored "+file+" sha256="+sha256File(t, file)) {
		t.Fatalf("exit status %d:\n%s", r.code, r.out)
	}
	sent, err := os.ReadFile(got)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--host=inventory.shop.svc --port=3306 --user=root --protocol=TCP", "INSERT INTO t VALUES ('x');"} {
		if !strings.Contains(string(sent), want) {
			t.Errorf("mysql was not given %q:\n%s", want, sent)
		}
	}

	for _, c := range []struct {
		fail  string
		code  int32
		cause string
	}{
		{"ERROR 1050 (42S01) at line 25: Table 'orders' already exists", RestoreSQLError, "SQL error"},
		{"ERROR 2005 (HY000): Unknown MySQL server host 'inventory.shop.svc' (-2)", RestoreCannotConnect, "cannot connect"},
		{"ERROR 2013 (HY000) at line 40: Lost connection to MySQL server during query", RestoreCannotConnect, "cannot connect"},
	} {
		r := runRestore(t, bin, append(env[:len(env):len(env)], "FAIL="+c.fail))
		r.expectFailure(t, c.code, c.cause, file)
		if !strings.Contains(r.out, c.fail) {
			t.Errorf("the message does not carry the client's error %q:\n%s", c.fail, r.out)
		}
	}
	wrong := runRestore(t, bin, append(env[:len(env):len(env)], "MYSQL_PWD=wrong-pw"))
	wrong.expectFailure(t, RestoreCannotConnect, "cannot connect", file)
	// MariaDB's client is mariadb: without it the image is not a MariaDB image.
	runRestore(t, bin, append(env[:len(env):len(env)], "DB_ENGINE=mariadb", "PATH="+bin)).expectFailure(t, RestoreMisconfigured, "misconfigured", file)
}

// A dump made by the backup script with MariaDB's own mariadb-dump, restored by the
// restore script with its mariadb client into a server that lost the database, gives
// the same rows, routines and views.
func TestRestoreScriptAgainstMariaDB(t *testing.T) {
	m := dbserver.StartMariaDB(t, "root-Pa55word")
	m.Exec(t, `CREATE USER 'app'@'%' IDENTIFIED BY '`+testPassword+`';
		CREATE DATABASE shop; GRANT ALL ON shop.* TO 'app'@'%';
		CREATE TABLE shop.orders (id int PRIMARY KEY, item varchar(100), note text, placed datetime, data varbinary(16)) CHARSET utf8mb4;
		INSERT INTO shop.orders VALUES (1, 'anchor-chain', 'it''s "quoted"\\ and\nmulti-line', '2025-01-01 03:00:00', x'00ff10'),
			(2, 'bollard', NULL, '2025-02-01 12:30:00', NULL), (3, 'Ankerkette ⚓', '', NULL, x'');
		CREATE DEFINER = 'app'@'%' VIEW shop.big_orders AS SELECT id, item FROM shop.orders WHERE id > 1;
		CREATE DEFINER = 'app'@'%' FUNCTION shop.order_count() RETURNS int READS SQL DATA RETURN (SELECT count(*) FROM shop.orders);`)
	const rows = `SELECT id, item, coalesce(note, '<null>'), placed, hex(data) FROM shop.orders ORDER BY id;
		SELECT shop.order_count(), (SELECT count(*) FROM shop.big_orders);`
	before := m.Exec(t, rows)

	dir := filepath.Join(t.TempDir(), "backups")
	runScript(t, BackupScript, m.BinDir, []string{
		"DB_ENGINE=mariadb", "DB_HOST=127.0.0.1", "DB_PORT=" + strconv.Itoa(m.Port), "DB_USER=app",
		"MYSQL_PWD=" + testPassword, "BACKUP_DIR=" + dir, "KEEP_LAST=0", "DUMP_OWNER=nightly",
	})
	dumps := listDir(t, dir)
	if len(dumps) != 1 {
		t.Fatalf("dumps %v", dumps)
	}
	file := filepath.Join(dir, dumps[0])
	if sql := gunzip(t, file); !strings.Contains(sql, "CREATE DATABASE") || !strings.Contains(sql, "anchor-chain") || !strings.Contains(sql, "order_count") {
		t.Fatalf("dump %s lacks the database, its rows or its function:\n%s", dumps[0], sql)
	}

	m.Exec(t, `DROP DATABASE shop`)
	env := []string{
		"DB_ENGINE=mariadb", "DB_HOST=127.0.0.1", "DB_PORT=" + strconv.Itoa(m.Port), "DB_USER=root",
		"MYSQL_PWD=" + m.RootPassword, "RESTORE_FILE=" + file,
	}
	r := runRestore(t, m.BinDir, env)
	want := "restore: restored " + file + " sha256=" + sha256File(t, file) + " into mariadb at 127.0.0.1:" + strconv.Itoa(m.Port) + "\n"
	if r.code != 0 || r.out != want || r.report != want {
		t.Fatalf("restore: exit status %d, output %q, report %q; want %q", r.code, r.out, r.report, want)
	}
	if after := m.Exec(t, rows); after != before {
		t.Errorf("restored rows differ:\n got  %q\n want %q", after, before)
	}
	if !m.CanLogIn(t, "app", testPassword) {
		t.Error("the application user lost its login")
	}

	// A dump the server refuses; a wrong password; no server.
	broken := writeGzip(t, dir, "broken.sql.gz", "CREATE TABLE shop.orders (id int);\n")
	r = runRestore(t, m.BinDir, append(env[:len(env):len(env)], "RESTORE_FILE="+broken))
	r.expectFailure(t, RestoreSQLError, "SQL error", broken)
	if !strings.Contains(r.out, "ERROR 1050") {
		t.Errorf("the message does not carry the server's error:\n%s", r.out)
	}
	wrong := runRestore(t, m.BinDir, append(env[:len(env):len(env)], "MYSQL_PWD=wrong-pw"))
	wrong.expectFailure(t, RestoreCannotConnect, "cannot connect", file)
	runRestore(t, m.BinDir, append(env[:len(env):len(env)], "DB_PORT=1")).expectFailure(t, RestoreCannotConnect, "cannot connect", file)
	if strings.Contains(wrong.out, "wrong-pw") || strings.Contains(r.out, m.RootPassword) {
		t.Errorf("the script printed a password")
	}
	if after := m.Exec(t, rows); after != before {
		t.Errorf("failed restores changed the rows:\n got  %q\n want %q", after, before)
	}
}

// Without RESTORE_FILE the script restores the newest dump of RESTORE_OWNER, not one of a
// Backup whose name merely starts with the owner's, nor a partial dump; and says so when
// the owner has none.
func TestRestoreScriptPicksNewestDump(t *testing.T) {
	bin := t.TempDir()
	got := filepath.Join(bin, "got")
	fake := "#!/bin/sh\ncat >\"" + got + "\"\n"
	if err := os.WriteFile(filepath.Join(bin, "mysql"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeGzip(t, dir, "orders-20250101T030000Z.sql.gz", "-- old\n")
	newest := writeGzip(t, dir, "orders-20250102T030000Z.sql.gz", "-- newest\n")
	writeGzip(t, dir, "orders-nightly-20250103T030000Z.sql.gz", "-- another Backup's\n")
	writeGzip(t, dir, ".orders-20250104T030000Z.sql.gz.partial", "-- unfinished\n")
	env := []string{"DB_ENGINE=mysql", "DB_HOST=h", "DB_PORT=3306", "DB_USER=root", "MYSQL_PWD=" + testPassword,
		"RESTORE_FILE=", "RESTORE_DIR=" + dir, "RESTORE_OWNER=orders"}
	r := runRestore(t, bin, env)
	if r.code != 0 || !strings.Contains(r.out, "restored "+newest+" sha256=") {
		t.Fatalf("want %s restored, got exit status %d:\n%s", newest, r.code, r.out)
	}
	if sent, _ := os.ReadFile(got); string(sent) != "-- newest\n" {
		t.Errorf("the client was given %q, want the newest dump", sent)
	}
	none := runRestore(t, bin, append(env[:len(env):len(env)], "RESTORE_OWNER=payments"))
	none.expectFailure(t, RestoreFileMissing, "file missing", dir+"/payments-*.sql.gz")
}

// Two dumps of one Backup started at once (its scheduled Job beside an on-demand one)
// take turns: both succeed with a dump of their own, the second says it waited.
func TestBackupsStartedTogetherTakeTurns(t *testing.T) {
	bin := t.TempDir()
	// A dump that takes a moment, so that the two overlap.
	fake := "#!/bin/sh\nsleep 1\necho \"-- dumped\"\n"
	if err := os.WriteFile(filepath.Join(bin, "pg_dump"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "backups")
	env := []string{"DB_ENGINE=postgresql", "DB_HOST=orders.shop.svc", "DB_PORT=5432", "DB_USER=app",
		"PGPASSWORD=" + testPassword, "BACKUP_DIR=" + dir, "KEEP_LAST=0", "DUMP_OWNER=orders"}
	type result struct {
		out string
		err error
	}
	results := make(chan result, 2)
	for range 2 {
		go func() {
			out, err := scriptCommand(BackupScript, bin, env).CombinedOutput()
			results <- result{string(out), err}
		}()
	}
	var outs []string
	for range 2 {
		r := <-results
		if r.err != nil {
			t.Fatalf("a backup failed: %v\n%s", r.err, r.out)
		}
		outs = append(outs, r.out)
	}
	dumps := listDir(t, dir)
	if len(dumps) != 2 || dumps[0] == dumps[1] {
		t.Fatalf("two backups at once left %v, want two dumps of their own; outputs:\n%s", dumps, strings.Join(outs, "\n"))
	}
	for _, d := range dumps {
		if sql := gunzip(t, filepath.Join(dir, d)); sql != "-- dumped\n" {
			t.Errorf("dump %s holds %q, want one whole dump", d, sql)
		}
	}
	if joined := strings.Join(outs, "\n"); !strings.Contains(joined, "waiting for it to finish") {
		t.Errorf("neither backup says it waited for the other:\n%s", joined)
	}
}
