package nodeimage

import (
	_ "embed"
	"io/fs"
	"slices"
)

// PauseRef is the sandbox ("pause") image: containerd's sandbox_image on the real node.
const PauseRef = "mooring.local/pause:1"

var (
	//go:embed pause/main.go
	pauseSource []byte
	//go:embed files/nginx.conf
	nginxConf string
	//go:embed files/default.conf
	nginxDefaultConf string
)

// debianPath is the PATH of Debian's own images.
const debianPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// debianStrip is what no image needs of a Debian root filesystem: documentation,
// translations, apt's and dpkg's leftovers, logs of the build, and the build host's
// name and resolver (the runtime provides the container's).
var debianStrip = []string{
	"usr/share/doc", "usr/share/man", "usr/share/info", "usr/share/locale", "usr/share/lintian",
	"var/lib/apt/lists/*", "var/cache/apt/*", "var/cache/debconf/*-old", "var/lib/dpkg/*-old",
	"var/log/*",
	"etc/hostname", "etc/resolv.conf",
}

// debianKeep are the copyright files Debian's licences ask to ship beside the binaries.
var debianKeep = []string{"usr/share/doc/*/copyright"}

// Catalog returns every image the samples and tests need, the OnDemand ones included.
func Catalog() []Spec {
	return []Spec{pause(), busybox(), memcached(), nginxUnprivileged(), postgres(), mariadb()}
}

// Startup returns the images a cluster's real node loads when it starts: the
// catalogue without its OnDemand images.
func Startup() []Spec {
	return slices.DeleteFunc(Catalog(), func(s Spec) bool { return s.OnDemand })
}

// Find returns the catalogue's image named ref.
func Find(ref string) (Spec, bool) {
	i := slices.IndexFunc(Catalog(), func(s Spec) bool { return s.Ref == ref })
	if i < 0 {
		return Spec{}, false
	}
	return Catalog()[i], true
}

// pause holds a pod's namespaces: a static Go program of Mooring's own, user 65535 as
// Kubernetes' pause image.
func pause() Spec {
	return Spec{
		Ref:         PauseRef,
		Description: "Mooring's sandbox (pause) image for the local cluster's real node: one static Go program that waits for SIGTERM and reaps orphaned processes",
		Go:          &GoProgram{Name: "pause", Source: pauseSource},
		Config:      Config{Entrypoint: []string{"/pause"}, User: "65535:65535"},
	}
}

// busybox is the official image's layout on Debian's static build: busybox alone, its
// applets as symbolic links, /bin and /sbin as Debian's merged-/usr links, a root and a
// nobody user, and sh to run.
func busybox() Spec {
	return Spec{
		Ref:         "docker.io/library/busybox:1.37",
		Description: "Debian trixie's busybox-static 1.37 standing in for the official busybox image: one static busybox, its applets linked in /usr/bin and /usr/sbin",
		Debian: &Debian{
			Suite:    "trixie",
			Packages: []string{"busybox-static"},
			Extract:  true,
			Hooks: []string{
				`--setup-hook=mkdir -p "$1/usr/bin" "$1/usr/sbin" && ln -s usr/bin "$1/bin" && ln -s usr/sbin "$1/sbin"`,
				// busybox is static: it runs in the bare root filesystem.
				`--extract-hook=chroot "$1" /usr/bin/busybox --install -s`,
			},
		},
		Config: Config{Cmd: []string{"sh"}, Env: []string{debianPath}},
		Files: map[string]File{
			"etc/passwd": {Content: "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n"},
			"etc/group":  {Content: "root:x:0:\nnogroup:x:65534:\n"},
		},
		// Nothing is installed: apt's and dpkg's directories and the package's
		// documentation and initramfs hook are all there is besides busybox (and its
		// initrd's /linuxrc link, which the official image has no use for either).
		Strip: []string{"etc/apt", "etc/dpkg", "etc/fstab", "etc/hostname", "etc/resolv.conf", "linuxrc", "usr/share", "var/*"},
	}
}

// memcached is Debian's memcached run as the official image runs it: memcached itself
// as the entrypoint, so that the flags Mooring passes as arguments reach it, as user
// 11211 (Mooring's pods also set runAsUser 11211 and a read-only root filesystem, which
// memcached never writes to).
func memcached() Spec {
	return Spec{
		Ref:         "docker.io/library/memcached:1.6",
		Description: "Debian trixie's memcached 1.6 standing in for the official memcached image: memcached as the entrypoint, user 11211",
		Debian:      &Debian{Suite: "trixie", Packages: []string{"memcached"}},
		Config: Config{
			Entrypoint:   []string{"memcached"},
			User:         "11211:11211",
			Env:          []string{debianPath},
			ExposedPorts: []string{"11211/tcp"},
		},
		Strip: debianStrip,
		Keep:  debianKeep,
	}
}

// nginxUnprivileged behaves as nginxinc/nginx-unprivileged: nginx as numeric user 101
// (the App's pods set runAsNonRoot without runAsUser, which the kubelet can only check
// for a numeric user), on port 8080, needing no capability, writing only to /tmp,
// logging to stdout and stderr, serving Debian's welcome page at /.
func nginxUnprivileged() Spec {
	return Spec{
		Ref:         "docker.io/nginxinc/nginx-unprivileged:1.26",
		Description: "Debian trixie's nginx 1.26 standing in for nginxinc/nginx-unprivileged: user 101, port 8080, pid and temporary files in /tmp, logs on stdout and stderr",
		Debian:      &Debian{Suite: "trixie", Packages: []string{"nginx"}},
		Config: Config{
			Cmd:          []string{"nginx", "-g", "daemon off;"},
			User:         "101:101",
			Env:          []string{debianPath},
			ExposedPorts: []string{"8080/tcp"},
			StopSignal:   "SIGQUIT",
		},
		Files: map[string]File{
			"etc/nginx/nginx.conf":          {Content: nginxConf},
			"etc/nginx/conf.d/default.conf": {Content: nginxDefaultConf},
			// nginx opens its compiled-in error log before it reads nginx.conf.
			"var/log/nginx/error.log":  {Link: "/dev/stderr"},
			"var/log/nginx/access.log": {Link: "/dev/stdout"},
		},
		// As upstream: the configuration and the cache are the nginx user's to change.
		Writable: []string{"etc/nginx", "var/cache/nginx"},
		// Debian's default site listens on port 80, which user 101 cannot bind.
		Strip: append(slices.Clone(debianStrip), "etc/nginx/sites-enabled", "etc/nginx/sites-available"),
		Keep:  debianKeep,
	}
}

// databaseID is the uid and gid of the official postgres and mariadb images' database
// users: the postgres image's Dockerfile asks for 999, and 999 is the first system id
// Ubuntu's useradd gives the mariadb image's mysql user.
const databaseID = 999

// postgres is Debian's PostgreSQL 18 set up as the official image is, without its
// entrypoint (nothing initialises a data directory by itself): user and group postgres
// 999, the server's and the clients' binaries on PATH from /usr/lib/postgresql/18/bin,
// the en_US.UTF-8 locale as LANG (initdb makes UTF8 databases), a postgresql.conf
// sample that listens on every address, a socket directory in /var/run/postgresql
// that anyone may use, and no cluster made at install time.
func postgres() Spec {
	const sample = `"$1/usr/share/postgresql/18/postgresql.conf.sample"`
	return Spec{
		Ref:         "docker.io/library/postgres:18",
		Description: "Debian sid's PostgreSQL 18 server (postgresql-18) standing in for the official postgres image, without its entrypoint: user postgres 999:999, the binaries in /usr/lib/postgresql/18/bin (on PATH), LANG en_US.utf8, no cluster made",
		OnDemand:    true,
		Debian: &Debian{
			Suite: "sid",
			// postgresql-common and ssl-cert ask for systemd or its standalone
			// tmpfiles and sysusers; apt would pick the whole of systemd.
			Packages: []string{"postgresql-18", "locales", "systemd-standalone-tmpfiles", "systemd-standalone-sysusers"},
			Users:    []User{{Name: "postgres", ID: databaseID, Home: "/var/lib/postgresql", Shell: "/bin/bash"}},
			Hooks: []string{
				// postgresql-18's postinst makes a cluster in /var/lib/postgresql/18/main
				// and /etc/postgresql/18/main unless createcluster.conf says not to; the
				// createcluster.conf postgresql-common installs reads this directory.
				`--essential-hook=mkdir -p "$1/etc/postgresql-common/createcluster.d" && ` +
					`echo 'create_main_cluster = false' > "$1/etc/postgresql-common/createcluster.d/no-main-cluster.conf"`,
				// As the official image: initdb's postgresql.conf listens on every address.
				`--customize-hook=sed -ri "s!^#?(listen_addresses)\s*=\s*\S+.*!\1 = '*'!" ` + sample + ` && grep -qF "listen_addresses = '*'" ` + sample,
				`--customize-hook=echo 'en_US.UTF-8 UTF-8' >> "$1/etc/locale.gen" && chroot "$1" locale-gen`,
			},
		},
		Config: Config{
			Cmd: []string{"postgres"},
			// The official image's variables, PG_VERSION (the PGDG package's version)
			// and GOSU_VERSION aside.
			Env:          []string{debianPath + ":/usr/lib/postgresql/18/bin", "LANG=en_US.utf8", "PG_MAJOR=18", "PGDATA=/var/lib/postgresql/18/docker"},
			ExposedPorts: []string{"5432/tcp"},
			StopSignal:   "SIGINT",
		},
		Dirs: map[string]Dir{
			// The official image's modes; mmdebstrap empties /run, where Debian makes
			// the socket directory at boot.
			"var/lib/postgresql": {UID: databaseID, GID: databaseID, Mode: 0o777 | fs.ModeSticky},
			"run/postgresql":     {UID: databaseID, GID: databaseID, Mode: 0o777 | fs.ModeSetgid | fs.ModeSticky},
		},
		Strip: debianStrip,
		Keep:  debianKeep,
	}
}

// mariadb is Debian's MariaDB 11.8 set up as the official image is, without its
// entrypoint: user and group mysql 999, mariadbd, the mariadb-* clients and
// mariadb-backup on PATH and no mysql* names for them, an empty /var/lib/mysql, a
// /run/mysqld that anyone may use, and the official image's configuration changes
// (listening on every address, no name resolution, /etc/mysql/conf.d read last).
func mariadb() Spec {
	return Spec{
		Ref:         "docker.io/library/mariadb:11.8",
		Description: "Debian trixie's MariaDB 11.8 server, clients and backup tool (mariadb-server, mariadb-client, mariadb-backup) standing in for the official mariadb image, without its entrypoint: user mysql 999:999, mariadbd in /usr/sbin, an empty /var/lib/mysql",
		OnDemand:    true,
		Debian: &Debian{
			Suite:    "trixie",
			Packages: []string{"mariadb-server", "mariadb-client", "mariadb-backup"},
			Users:    []User{{Name: "mysql", ID: databaseID, Home: "/var/lib/mysql", Shell: "/bin/sh"}},
			Hooks: []string{
				// mariadb-server's postinst runs mariadb-install-db.
				`--customize-hook=find "$1/var/lib/mysql" -mindepth 1 -delete`,
				// The official image's changes to Debian's configuration: listen on
				// every address, log and run as the server pleases, and read conf.d,
				// where a mounted configuration goes, after mariadb.conf.d.
				`--customize-hook=find "$1/etc/mysql" -name '*.cnf' -exec sed -Ei 's/^(bind-address|log|user\s)/#&/' {} +`,
				`--customize-hook=sed -i -e '/includedir/ {N;s/\(.*\)\n\(.*\)/\n\2\n\1/}' "$1/etc/mysql/mariadb.cnf"`,
			},
		},
		Config: Config{
			Cmd:          []string{"mariadbd"},
			Env:          []string{debianPath, "LANG=C.UTF-8"},
			ExposedPorts: []string{"3306/tcp"},
		},
		Files: map[string]File{
			// As the official image: other containers' addresses have no names worth
			// looking up.
			"etc/mysql/mariadb.conf.d/05-skipcache.cnf": {Content: "[mariadb]\nhost-cache-size=0\nskip-name-resolve\n"},
		},
		Dirs: map[string]Dir{
			"var/lib/mysql": {UID: databaseID, GID: databaseID},
			"run/mysqld":    {UID: databaseID, GID: databaseID, Mode: 0o777 | fs.ModeSticky},
		},
		// Debian links the mysql* names of the clients, server and scripts to the
		// mariadb* ones; the official 11.8 image has none of them.
		Strip: append(slices.Clone(debianStrip), "usr/bin/mysql*", "usr/sbin/mysqld"),
		Keep:  debianKeep,
	}
}
