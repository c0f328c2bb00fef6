package nodeimage

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// TestDatabaseImages builds the postgres and mariadb stand-ins as a cluster does, into
// the machine's image cache (so a warm cache makes it a check of the images the
// cluster will use, and a cold one builds them, a minute or two each), and checks what
// a database instance manager relies on when it runs the image's tools as uid 999 with
// its own data directory: the users, the tools on PATH, gzip and /bin/sh, the socket
// directories, no data directory made at build time. When containerd, ctr and runc are
// there it also runs each image, as postgres and as mysql, with a data volume at
// /var/lib/mooring/data and sockets in /run/mooring: initdb or mariadb-install-db, the
// server, a client query, a dump through gzip and a base backup.
func TestDatabaseImages(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the database images with mmdebstrap: not in -short")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root, for mmdebstrap's root mode")
	}
	if _, err := exec.LookPath("mmdebstrap"); err != nil {
		t.Skip("mmdebstrap not found; install Debian's package: apt-get install mmdebstrap")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Minute)
	defer cancel()

	pg, _ := Find("docker.io/library/postgres:18")
	maria, _ := Find("docker.io/library/mariadb:11.8")
	archives, err := EnsureAll(ctx, []Spec{pg, maria}, Options{Log: testLog{t}})
	if err != nil {
		t.Fatal(err)
	}

	t.Run("postgres files", func(t *testing.T) {
		img := readImageArchive(t, archives[0])
		c := img.config.Config
		if len(c.Entrypoint) != 0 || !slices.Equal(c.Cmd, []string{"postgres"}) || c.User != "" || c.StopSignal != "SIGINT" {
			t.Errorf("entrypoint %q cmd %q user %q stop signal %q; want the official image's, without its entrypoint", c.Entrypoint, c.Cmd, c.User, c.StopSignal)
		}
		env := envMap(c.Env)
		if !strings.HasSuffix(env["PATH"], ":/usr/lib/postgresql/18/bin") || env["PGDATA"] != "/var/lib/postgresql/18/docker" || env["LANG"] != "en_US.utf8" {
			t.Errorf("env %q; want the official image's PATH, PGDATA and LANG", c.Env)
		}
		img.checkUser(t, "postgres", "/var/lib/postgresql")
		for _, tool := range []string{"initdb", "postgres", "pg_ctl", "pg_basebackup", "pg_isready", "psql", "pg_dump", "pg_dumpall", "pg_restore", "pg_controldata"} {
			img.checkExecutable(t, "/usr/lib/postgresql/18/bin/"+tool)
			img.checkOnPath(t, env["PATH"], tool)
		}
		img.checkShellAndGzip(t, env["PATH"])
		img.checkDir(t, "var/lib/postgresql", 0o1777)
		img.checkDir(t, "run/postgresql", 0o3777)
		for _, prefix := range []string{"var/lib/postgresql/", "etc/postgresql/"} {
			if made := img.under(prefix); len(made) > 0 {
				t.Errorf("%s holds %v: a cluster made at install time; the official image has none", prefix, made[:min(len(made), 5)])
			}
		}
		if sample := img.files["usr/share/postgresql/18/postgresql.conf.sample"]; !strings.Contains(sample, "\nlisten_addresses = '*'") {
			t.Error("postgresql.conf.sample does not listen on every address, as the official image's does")
		}
		if _, ok := img.entries["usr/lib/locale/locale-archive"]; !ok {
			t.Error("no compiled locales: LANG en_US.utf8 names a locale the image lacks")
		}
		img.checkOwners(t, "etc/postgresql")
	})

	t.Run("mariadb files", func(t *testing.T) {
		img := readImageArchive(t, archives[1])
		c := img.config.Config
		if len(c.Entrypoint) != 0 || !slices.Equal(c.Cmd, []string{"mariadbd"}) || c.User != "" {
			t.Errorf("entrypoint %q cmd %q user %q; want the official image's, without its entrypoint", c.Entrypoint, c.Cmd, c.User)
		}
		env := envMap(c.Env)
		if env["PATH"] != strings.TrimPrefix(debianPath, "PATH=") || env["LANG"] != "C.UTF-8" {
			t.Errorf("env %q; want Debian's PATH and the official image's LANG", c.Env)
		}
		img.checkUser(t, "mysql", "/var/lib/mysql")
		for _, tool := range []string{"/usr/sbin/mariadbd", "/usr/bin/mariadb", "/usr/bin/mariadb-dump", "/usr/bin/mariadb-install-db", "/usr/bin/mariadb-admin", "/usr/bin/mariadb-backup"} {
			img.checkExecutable(t, tool)
			img.checkOnPath(t, env["PATH"], path.Base(tool))
		}
		for _, dir := range strings.Split(env["PATH"], ":") {
			resolved, _ := img.resolve(dir)
			for _, name := range img.under(resolved + "/") {
				if strings.HasPrefix(path.Base(name), "mysql") {
					t.Errorf("%s (%s on PATH): the official mariadb 11.8 image has no mysql* names", name, dir)
				}
			}
		}
		img.checkShellAndGzip(t, env["PATH"])
		img.checkDir(t, "var/lib/mysql", 0o755)
		img.checkDir(t, "run/mysqld", 0o1777)
		if made := img.under("var/lib/mysql/"); len(made) > 0 {
			t.Errorf("/var/lib/mysql holds %v; the official image's is empty", made[:min(len(made), 5)])
		}
		if server := img.files["etc/mysql/mariadb.conf.d/50-server.cnf"]; server == "" || hasLine(server, "bind-address") {
			t.Error("50-server.cnf missing or still binds to one address; the official image comments bind-address out")
		}
		cnf := img.files["etc/mysql/mariadb.cnf"]
		if own, mounted := strings.Index(cnf, "!includedir /etc/mysql/mariadb.conf.d/"), strings.Index(cnf, "!includedir /etc/mysql/conf.d/"); own < 0 || mounted < own {
			t.Errorf("mariadb.cnf reads conf.d at %d, mariadb.conf.d at %d; want conf.d last, as the official image", mounted, own)
		}
		if !strings.Contains(img.files["etc/mysql/mariadb.conf.d/05-skipcache.cnf"], "skip-name-resolve") {
			t.Error("no 05-skipcache.cnf with skip-name-resolve")
		}
		if h := img.entries["usr/lib/mysql/plugin/auth_pam_tool_dir"]; h == nil || h.Uid != databaseID {
			t.Error("/usr/lib/mysql/plugin/auth_pam_tool_dir missing or not the mysql user's, as mariadb-server's postinst makes it")
		}
		img.checkOwners(t)
	})

	for _, tool := range []string{"containerd", "ctr", "runc"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Logf("%s not found: the images' files checked, not run; install Debian's packages: apt-get install containerd runc", tool)
			return
		}
	}
	address := startContainerd(ctx, t)
	ctrPath, _ := exec.LookPath("ctr")
	for _, archive := range archives {
		if err := Import(ctx, ctrPath, address, archive); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("postgres runs", func(t *testing.T) {
		out := runAsDatabaseUser(ctx, t, ctrPath, address, pg.Ref, "/var/lib/postgresql", postgresSmoke)
		for _, want := range []string{"postgres (PostgreSQL) 18.", "UTF8 en_US.utf8", "dump 1", "base backup 18", "ok"} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
	})
	t.Run("mariadb runs", func(t *testing.T) {
		out := runAsDatabaseUser(ctx, t, ctrPath, address, maria.Ref, "/var/lib/mysql", mariadbSmoke)
		for _, want := range []string{"mariadbd  Ver 11.8.", "mysql@localhost 11.8.", "dump 1", "backup done", "ok"} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
	})
}

// postgresSmoke is what a manager does with the postgres image, by the names on its PATH.
const postgresSmoke = `set -eu
test "$(id -un):$(id -gn)" = postgres:postgres
postgres --version
data=/var/lib/mooring/data/pgdata
initdb -D "$data" -U postgres --auth=trust >/dev/null
pg_ctl -D "$data" -l /tmp/postgres.log -o "-c listen_addresses='' -k /run/mooring" -w start >/dev/null
pg_isready -h /run/mooring -q
psql -h /run/mooring -U postgres -XtAc "select pg_encoding_to_char(encoding) || ' ' || datcollate from pg_database where datname = 'postgres'"
pg_dumpall -h /run/mooring -U postgres | gzip -c > /tmp/all.sql.gz
echo "dump $(gzip -dc /tmp/all.sql.gz | grep -c 'PostgreSQL database cluster dump complete')"
pg_basebackup -h /run/mooring -U postgres -D /tmp/base -c fast
echo "base backup $(cat /tmp/base/PG_VERSION)"
pg_ctl -D "$data" -m fast -w stop >/dev/null
echo ok
`

// mariadbSmoke is what a manager does with the mariadb image, by the names on its PATH.
const mariadbSmoke = `set -eu
test "$(id -un):$(id -gn)" = mysql:mysql
mariadbd --version
data=/var/lib/mooring/data/mysql sock=/run/mooring/mysqld.sock
mariadb-install-db --datadir="$data" --auth-root-socket-user=mysql --skip-test-db >/tmp/install.log 2>&1 || { cat /tmp/install.log; exit 1; }
mariadbd --datadir="$data" --socket="$sock" --pid-file=/run/mooring/mysqld.pid --skip-networking >/tmp/mariadbd.log 2>&1 &
i=0
until mariadb-admin --socket="$sock" ping >/dev/null 2>&1; do
	i=$((i + 1)); [ "$i" -lt 300 ] || { cat /tmp/mariadbd.log; exit 1; }; sleep 0.1
done
mariadb --socket="$sock" -NBe 'select concat(current_user(), " ", version())'
mariadb-dump --socket="$sock" --all-databases | gzip -c > /tmp/all.sql.gz
echo "dump $(gzip -dc /tmp/all.sql.gz | grep -c '^-- Dump completed')"
mariadb-backup --backup --socket="$sock" --target-dir=/tmp/backup >/tmp/backup.log 2>&1 || { cat /tmp/backup.log; exit 1; }
echo "backup done"
mariadb-admin --socket="$sock" shutdown
wait
echo ok
`

// runAsDatabaseUser runs script in a container of ref as uid and gid 999 (by number,
// as a pod's runAsUser does), with a data volume and a socket directory as a manager's
// pod has them, and returns its output. ctr runs as root and mounts its own /run, so the
// script is started through setpriv, and /run/mooring is a mount of its own. The kubelet
// gives every container an /etc/hosts that names localhost and the pod; ctr does not,
// so the test does (mariadb-install-db insists on resolving the host's name).
func runAsDatabaseUser(ctx context.Context, t *testing.T, ctrPath, address, ref, home, script string) string {
	t.Helper()
	hostname, _ := os.Hostname()
	hosts := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(hosts, []byte("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n127.0.1.1\t"+hostname+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mounts := "--mount=type=bind,src=" + hosts + ",dst=/etc/hosts,options=rbind:ro "
	for _, dst := range []string{"/var/lib/mooring/data", "/run/mooring"} {
		src := t.TempDir()
		if err := os.Chown(src, databaseID, databaseID); err != nil {
			t.Fatal(err)
		}
		mounts += fmt.Sprintf("--mount=type=bind,src=%s,dst=%s,options=rbind:rw ", src, dst)
	}
	id := strconv.Itoa(databaseID)
	args := append([]string{"--address", address, "--namespace", Namespace, "run", "--rm", "--env", "HOME=" + home},
		strings.Fields(mounts)...)
	args = append(args, ref, "nodeimage-"+path.Base(home), "setpriv", "--reuid="+id, "--regid="+id, "--init-groups", "sh", "-c", script)
	start := time.Now()
	out, err := exec.CommandContext(ctx, ctrPath, args...).CombinedOutput()
	t.Logf("%s ran in %s:\n%s", ref, time.Since(start).Round(100*time.Millisecond), out)
	if err != nil {
		t.Fatalf("ctr run %s: %v", ref, err)
	}
	return string(out)
}

// imageView is what a one-layer image archive holds: its config, its layer's entries
// by name (without a trailing slash), and the text of its small files under etc and
// usr/share.
type imageView struct {
	config  v1.ConfigFile
	entries map[string]*tar.Header
	order   []string
	files   map[string]string
}

func readImageArchive(t *testing.T, archive string) *imageView {
	t.Helper()
	// First the small members (index, manifest, config), then the layer they name.
	small := map[string][]byte{}
	walkTar(t, archive, func(h *tar.Header, r io.Reader) {
		if h.Size < 1<<20 {
			body, err := io.ReadAll(r)
			if err != nil {
				t.Fatal(err)
			}
			small[h.Name] = body
		}
	})
	index := decode[v1.IndexManifest](t, small["index.json"])
	if len(index.Manifests) != 1 {
		t.Fatalf("index lists %d manifests, want 1", len(index.Manifests))
	}
	manifest := decode[v1.Manifest](t, small["blobs/sha256/"+index.Manifests[0].Digest.Hex])
	if len(manifest.Layers) != 1 {
		t.Fatalf("manifest has %d layers, want 1", len(manifest.Layers))
	}
	img := &imageView{
		config:  decode[v1.ConfigFile](t, small["blobs/sha256/"+manifest.Config.Digest.Hex]),
		entries: map[string]*tar.Header{},
		files:   map[string]string{},
	}
	layerName := "blobs/sha256/" + manifest.Layers[0].Digest.Hex
	walkTar(t, archive, func(h *tar.Header, r io.Reader) {
		if h.Name != layerName {
			return
		}
		zr, err := gzip.NewReader(r)
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(zr)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				t.Fatalf("layer: %v", err)
			}
			name := strings.TrimSuffix(h.Name, "/")
			img.entries[name] = h
			img.order = append(img.order, name)
			if h.Typeflag == tar.TypeReg && h.Size < 1<<20 && (strings.HasPrefix(name, "etc/") || strings.HasPrefix(name, "usr/share/")) {
				body, err := io.ReadAll(tr)
				if err != nil {
					t.Fatal(err)
				}
				img.files[name] = string(body)
			}
		}
	})
	if len(img.entries) == 0 {
		t.Fatalf("%s: layer %s not found or empty", archive, layerName)
	}
	return img
}

func walkTar(t *testing.T, file string, visit func(*tar.Header, io.Reader)) {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	tr := tar.NewReader(bufio.NewReader(f))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		visit(h, tr)
	}
}

// resolve follows the symbolic links on the way to p in the layer and returns the path
// it leads to and its entry (nil when there is none).
func (img *imageView) resolve(p string) (string, *tar.Header) {
	parts := strings.Split(relative(p), "/")
	cur := ""
	for hops := 0; len(parts) > 0; {
		part := parts[0]
		parts = parts[1:]
		if part == "" {
			continue
		}
		next := path.Join(cur, part)
		h, ok := img.entries[next]
		if !ok {
			return path.Join(append([]string{next}, parts...)...), nil
		}
		if h.Typeflag == tar.TypeSymlink {
			if hops++; hops > 40 {
				return next, nil
			}
			target := h.Linkname
			if !strings.HasPrefix(target, "/") {
				target = path.Join("/", cur, target)
			}
			parts = append(strings.Split(relative(target), "/"), parts...)
			cur = ""
			continue
		}
		cur = next
	}
	return cur, img.entries[cur]
}

// executable reports whether p leads to a file anyone may run.
func (img *imageView) executable(p string) (string, bool) {
	resolved, h := img.resolve(p)
	if h != nil && h.Typeflag == tar.TypeLink {
		resolved, h = h.Linkname, img.entries[h.Linkname]
	}
	return resolved, h != nil && h.Typeflag == tar.TypeReg && h.Mode&0o111 == 0o111
}

func (img *imageView) checkExecutable(t *testing.T, p string) {
	t.Helper()
	if resolved, ok := img.executable(p); !ok {
		t.Errorf("%s (%s) is not an executable file in the image", p, resolved)
	}
}

// checkOnPath checks that a shell with the image's PATH finds name, as sh's command
// lookup does: the first directory that has it.
func (img *imageView) checkOnPath(t *testing.T, pathEnv, name string) {
	t.Helper()
	for _, dir := range strings.Split(pathEnv, ":") {
		if _, h := img.resolve(dir + "/" + name); h == nil {
			continue
		}
		if resolved, ok := img.executable(dir + "/" + name); !ok {
			t.Errorf("%s, first on PATH, leads to %s, which is not executable", dir+"/"+name, resolved)
		}
		return
	}
	t.Errorf("%s is not on PATH %s", name, pathEnv)
}

func (img *imageView) checkShellAndGzip(t *testing.T, pathEnv string) {
	t.Helper()
	img.checkExecutable(t, "/bin/sh")
	img.checkOnPath(t, pathEnv, "sh")
	img.checkOnPath(t, pathEnv, "gzip")
}

// checkUser checks the database user's /etc/passwd and /etc/group entries: uid and gid
// 999, as in the official image, and nobody else with either number.
func (img *imageView) checkUser(t *testing.T, name, home string) {
	t.Helper()
	id := strconv.Itoa(databaseID)
	for _, db := range []struct {
		file string
		want []string // fields after the password
	}{
		{"etc/passwd", []string{id, id, "", home}},
		{"etc/group", []string{id}},
	} {
		found := false
		for _, line := range strings.Split(img.files[db.file], "\n") {
			fields := strings.Split(line, ":")
			if len(fields) < 3 {
				continue
			}
			if fields[0] == name {
				found = true
				if got := fields[2:min(len(fields), 2+len(db.want))]; !slices.Equal(got, db.want) {
					t.Errorf("/%s: %q, want %s with %v", db.file, line, name, db.want)
				}
			} else if fields[2] == id {
				t.Errorf("/%s: %q has the number %s, which is %s's", db.file, line, id, name)
			}
		}
		if !found {
			t.Errorf("/%s has no %s", db.file, name)
		}
	}
}

// checkDir checks that dir is a directory of the database user's with mode.
func (img *imageView) checkDir(t *testing.T, dir string, mode int64) {
	t.Helper()
	h, ok := img.entries[dir]
	if !ok || h.Typeflag != tar.TypeDir || h.Uid != databaseID || h.Gid != databaseID || h.Mode != mode {
		if !ok {
			t.Errorf("/%s missing", dir)
			return
		}
		t.Errorf("/%s: type %c owner %d:%d mode %o; want a directory owned %d:%d mode %o", dir, h.Typeflag, h.Uid, h.Gid, h.Mode, databaseID, databaseID, mode)
	}
}

// checkOwners checks that every file's owner and group are in /etc/passwd and
// /etc/group, and that the files the packages made for the database user are the
// user's.
func (img *imageView) checkOwners(t *testing.T, ownedByUser ...string) {
	t.Helper()
	ids := func(file string) map[string]bool {
		m := map[string]bool{}
		for _, line := range strings.Split(img.files[file], "\n") {
			if fields := strings.Split(line, ":"); len(fields) > 2 {
				m[fields[2]] = true
			}
		}
		return m
	}
	users, groups := ids("etc/passwd"), ids("etc/group")
	var strays []string
	for _, name := range img.order {
		h := img.entries[name]
		if !users[strconv.Itoa(h.Uid)] || !groups[strconv.Itoa(h.Gid)] {
			strays = append(strays, fmt.Sprintf("%s %d:%d", name, h.Uid, h.Gid))
		}
	}
	if len(strays) > 0 {
		t.Errorf("%d files belong to a user or group the image does not have: %v", len(strays), strays[:min(len(strays), 10)])
	}
	for _, name := range ownedByUser {
		if h, ok := img.entries[name]; !ok || h.Uid != databaseID || h.Gid != databaseID {
			t.Errorf("/%s missing or not owned by %d:%d", name, databaseID, databaseID)
		}
	}
}

// under lists the layer's entries below prefix ("dir/").
func (img *imageView) under(prefix string) []string {
	var out []string
	for _, name := range img.order {
		if strings.HasPrefix(name, prefix) {
			out = append(out, name)
		}
	}
	return out
}

func envMap(env []string) map[string]string {
	m := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}

// hasLine reports whether text has a line that starts with key, not commented out.
func hasLine(text, key string) bool {
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), key) {
			return true
		}
	}
	return false
}
