package instance

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mooringhq/mooring/internal/testutil/dbserver"
)

// pgBin is the PostgreSQL of this machine, found where Debian installs it whatever the
// PATH (as the manager finds it in a Debian-based image), or a failure naming the package.
func pgBin(t *testing.T) (dir, major string) {
	t.Helper()
	pg := dbserver.RequirePostgreSQL(t)
	return pg.BinDir, pg.Major
}

// pgInstance is the flags of one PostgreSQL instance of a test cluster.
type pgInstance struct {
	index       int
	port        int
	dataDir     string
	adminSecret string
	appSecret   string
	// replSecret and tlsDir, when set, are the replication and TLS Secrets' directories.
	replSecret, tlsDir string
	// superuserAccess lets the test log in as postgres over TCP with its password.
	superuserAccess bool
}

func (i pgInstance) args(major string, primaryPort int) []string {
	a := []string{"--engine=postgresql", "--version=" + major, "--pod=db-" + strconv.Itoa(i.index),
		"--index=" + strconv.Itoa(i.index), "--port=" + strconv.Itoa(i.port), "--data-dir=" + i.dataDir,
		"--run-dir=" + filepath.Join(i.dataDir, "..", filepath.Base(i.dataDir)+"-run"),
		"--admin-secret-dir=" + i.adminSecret, "--app-secret-dir=" + i.appSecret}
	if i.index > 0 {
		a = append(a, "--primary-host=127.0.0.1", "--primary-port="+strconv.Itoa(primaryPort))
	}
	if i.replSecret != "" {
		a = append(a, "--replication-secret-dir="+i.replSecret)
	}
	if i.tlsDir != "" {
		a = append(a, "--tls-dir="+i.tlsDir)
	}
	if i.superuserAccess {
		a = append(a, "--superuser-access")
	}
	return a
}

// psqlAs runs sql against port as user with password (from the environment, as clients do).
func psqlAs(t *testing.T, bin string, port int, user, password, sql string) (string, error) {
	t.Helper()
	return psqlEnv(t, bin, port, user, password, sql)
}

// psqlEnv is psqlAs with libpq's variables in env (PGSSLMODE and the like).
func psqlEnv(t *testing.T, bin string, port int, user, password, sql string, env ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "psql"), "--no-psqlrc", "--no-password", "--tuples-only", "--no-align",
		"--set=ON_ERROR_STOP=1", "--host=127.0.0.1", "--port="+strconv.Itoa(port), "--username="+user, "--dbname=postgres")
	cmd.Env = append(append(os.Environ(), "PGPASSWORD="+password, "PGCONNECT_TIMEOUT=5"), env...)
	cmd.Stdin = strings.NewReader(sql)
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// TestPostgreSQLPrimaryAndReplica: the manager initialises a primary with the Secrets'
// users, clones a replica through its slot, and the replica streams what the
// application writes; /status tells the roles and the replica catches up.
func TestPostgreSQLPrimaryAndReplica(t *testing.T) {
	bin, major := pgBin(t)
	u := serverUser(t, "postgres")
	self := selfCopy(t, u)
	const admin, appPassword = `s3cret'"\:pw`, `app'pa:ss\word`
	adminDir := secretDir(t, u, map[string]string{"username": "postgres", "password": admin})
	appDir := secretDir(t, u, map[string]string{"username": "app", "password": appPassword})
	base := ownedDir(t, u)
	mk := func(i int) pgInstance {
		d := filepath.Join(base, "data-"+strconv.Itoa(i))
		for _, dir := range []string{d, d + "-run"} {
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(dir, u.uid, u.gid); err != nil {
				t.Fatal(err)
			}
		}
		return pgInstance{index: i, port: freePort(t), dataDir: d, adminSecret: adminDir, appSecret: appDir}
	}
	primary, replica := mk(0), mk(1)
	p := startManager(t, self, u, primary.args(major, primary.port)...)
	p.waitReady(t, 2*time.Minute)

	if _, err := psqlAs(t, bin, primary.port, "app", appPassword,
		"CREATE TABLE orders (id int PRIMARY KEY, item text); INSERT INTO orders VALUES (1, 'rope'), (2, 'anchor');"); err != nil {
		t.Fatalf("the application user cannot write on the primary: %v", err)
	}
	if out, err := psqlAs(t, bin, primary.port, "app", "wrong", "SELECT 1"); err == nil {
		t.Fatalf("a wrong password logged in: %s", out)
	}

	r := startManager(t, self, u, replica.args(major, primary.port)...)
	r.waitReady(t, 2*time.Minute)
	eventually(t, time.Minute, "the replica to have the primary's rows", func() error {
		out, err := psqlAs(t, bin, replica.port, "app", appPassword, "SELECT string_agg(item, ',' ORDER BY id) FROM orders")
		if err != nil || out != "rope,anchor" {
			return fmt.Errorf("replica answered %q (%w), want rope,anchor", out, err)
		}
		return nil
	})
	if _, err := psqlAs(t, bin, replica.port, "app", appPassword, "INSERT INTO orders VALUES (3, 'chain')"); err == nil {
		t.Fatal("the replica accepted a write")
	}
	eventually(t, time.Minute, "the replica to stream and catch up", func() error {
		ps, err := p.status()
		if err != nil {
			return err
		}
		rs, err := r.status()
		if err != nil {
			return err
		}
		if ps.Observation == nil || rs.Observation == nil {
			return fmt.Errorf("no observation: primary %+v replica %+v", ps, rs)
		}
		po, ro := ps.Observation, rs.Observation
		if po.Role != RolePrimary || ro.Role != RoleReplica || !ro.Streaming {
			return fmt.Errorf("primary %+v, replica %+v: want roles primary and replica, the replica streaming", po, ro)
		}
		if po.Sequence == nil || ro.Sequence == nil || *po.Sequence != *ro.Sequence {
			return fmt.Errorf("positions primary %s replica %s, want equal", po.Position, ro.Position)
		}
		return nil
	})
	for _, pr := range []*proc{p, r} {
		if strings.Contains(pr.log(), admin) || strings.Contains(pr.log(), appPassword) {
			t.Errorf("a password is in the manager's log:\n%s", pr.log())
		}
	}
	// A clean stop, replica first as a pod deletion in any order would do.
	r.stop(t)
	p.stop(t)
	if p.err != nil || r.err != nil {
		t.Fatalf("managers exited with %v and %v, want clean stops", p.err, r.err)
	}
}

// Causes the manager can name keep the server down, the data untouched and the manager
// up, with the cause in /status: an image without the server, a data directory of
// another major version, a volume with files Mooring did not make, a full volume.
func TestPostgreSQLFaults(t *testing.T) {
	bin, major := pgBin(t)
	u := serverUser(t, "postgres")
	self := selfCopy(t, u)
	adminDir := secretDir(t, u, map[string]string{"username": "postgres", "password": "pw"})
	appDir := secretDir(t, u, map[string]string{"username": "app", "password": "pw"})
	// The official image of another major version, made of this machine's server: its
	// binaries first on PATH, as that image has them, and spec.version naming another.
	// The test's own PATH has no say (Debian's puts no server on it).
	otherImage := []string{"PATH=" + bin + ":/usr/bin:/bin"}
	dataDir := func(files map[string]string) string {
		d := ownedDir(t, u)
		for name, content := range files {
			path := filepath.Join(d, name)
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return d
	}
	for _, c := range []struct {
		name, version, reason, message string
		files                          map[string]string
		env                            []string
	}{
		{name: "no server in the image", version: "99", reason: FaultMissingBinaries, message: "/usr/lib/postgresql/99/bin",
			env: []string{"PATH=/usr/bin:/bin"}},
		{name: "image of another version", version: "99", reason: FaultVersionMismatch, message: "spec.version is 99 and the image runs PostgreSQL " + major,
			env: otherImage},
		{name: "data of another major version", version: major, reason: FaultVersionMismatch, message: "initialised by PostgreSQL 14",
			files: map[string]string{"pgdata/PG_VERSION": "14\n", "pgdata/base/1/1259": "rows"}},
		{name: "a Bitnami data directory", version: major, reason: FaultUnknownData, message: "data",
			files: map[string]string{"data/PG_VERSION": major + "\n"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := dataDir(c.files)
			run := ownedDir(t, u)
			p := startManagerEnv(t, self, u, c.env, "--engine=postgresql", "--version="+c.version, "--pod=db-0", "--index=0",
				"--port="+strconv.Itoa(freePort(t)), "--data-dir="+d, "--run-dir="+run, "--admin-secret-dir="+adminDir, "--app-secret-dir="+appDir)
			eventually(t, 30*time.Second, "fault "+c.reason, func() error {
				s, err := p.status()
				if err != nil {
					return err
				}
				if s.Fault == nil || s.Fault.Reason != c.reason || !strings.Contains(s.Fault.Message, c.message) || s.Running || s.Phase != "Faulted" {
					return fmt.Errorf("status %+v, fault %s: want %s naming %q, the server down", s, faultText(s.Fault), c.reason, c.message)
				}
				return nil
			})
			resp, err := httpc.Get("http://" + p.statusAddr + "/healthz")
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("/healthz %v %v: a faulted manager stays alive, so the kubelet does not restart it", resp, err)
			}
			_ = resp.Body.Close()
			for name, content := range c.files {
				if b, err := os.ReadFile(filepath.Join(d, name)); err != nil || string(b) != content {
					t.Errorf("%s changed: %q %v", name, b, err)
				}
			}
			if _, err := os.Stat(filepath.Join(d, "pgdata", "postgresql.conf")); err == nil {
				t.Error("initdb ran over the refused data directory")
			}
		})
	}
}

// A volume too full to start on is a fault, not a crash loop; once it grows (the volume
// is expanded) the manager initialises and starts the server by itself.
func TestPostgreSQLFullVolume(t *testing.T) {
	_, major := pgBin(t)
	u := serverUser(t, "postgres")
	self := selfCopy(t, u)
	d := ownedDir(t, u)
	if err := syscall.Mount("tmpfs", d, "tmpfs", 0, "size=8m,mode=0755,uid="+strconv.Itoa(u.uid)); err != nil {
		t.Skipf("cannot mount a small tmpfs: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(d, syscall.MNT_DETACH) })
	adminDir := secretDir(t, u, map[string]string{"username": "postgres", "password": "pw"})
	appDir := secretDir(t, u, map[string]string{"username": "app", "password": "pw"})
	p := startManager(t, self, u, "--engine=postgresql", "--version="+major, "--pod=db-0", "--index=0",
		"--port="+strconv.Itoa(freePort(t)), "--data-dir="+d, "--run-dir="+ownedDir(t, u), "--admin-secret-dir="+adminDir, "--app-secret-dir="+appDir)
	eventually(t, 30*time.Second, "fault DiskFull", func() error {
		s, err := p.status()
		if err != nil {
			return err
		}
		if s.Fault == nil || s.Fault.Reason != FaultDiskFull || !strings.Contains(s.Fault.Message, "spec.storage.size") {
			return fmt.Errorf("status %+v fault %s", s, faultText(s.Fault))
		}
		return nil
	})
	if err := syscall.Mount("tmpfs", d, "tmpfs", syscall.MS_REMOUNT, "size=128m"); err != nil {
		t.Fatalf("grow the tmpfs: %v", err)
	}
	p.waitReady(t, 2*time.Minute)
}

// faultText is a fault for a test's message.
func faultText(f *Fault) string {
	if f == nil {
		return "none"
	}
	return f.Reason + ": " + f.Message
}
