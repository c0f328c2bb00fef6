package nodeimage

import (
	_ "embed"
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

// postgres is for the database tests to come: Debian's PostgreSQL 18 server binaries at
// Debian's paths, without the official image's entrypoint (nothing initialises a data
// directory by itself).
func postgres() Spec {
	return Spec{
		Ref:         "docker.io/library/postgres:18",
		Description: "Debian sid's PostgreSQL 18 server (postgresql-18) standing in for the official postgres image, without its entrypoint: the server binaries in /usr/lib/postgresql/18/bin (on PATH)",
		OnDemand:    true,
		Debian:      &Debian{Suite: "sid", Packages: []string{"postgresql-18"}},
		Config: Config{
			Cmd:          []string{"postgres"},
			Env:          []string{debianPath + ":/usr/lib/postgresql/18/bin", "PGDATA=/var/lib/postgresql/data"},
			ExposedPorts: []string{"5432/tcp"},
			StopSignal:   "SIGINT",
		},
		Strip: debianStrip,
		Keep:  debianKeep,
	}
}

// mariadb is for the database tests to come: Debian's MariaDB 11.8 server and clients
// at Debian's paths, without the official image's entrypoint.
func mariadb() Spec {
	return Spec{
		Ref:         "docker.io/library/mariadb:11.8",
		Description: "Debian trixie's MariaDB 11.8 server and clients (mariadb-server, mariadb-client) standing in for the official mariadb image, without its entrypoint: mariadbd in /usr/sbin",
		OnDemand:    true,
		Debian:      &Debian{Suite: "trixie", Packages: []string{"mariadb-server", "mariadb-client"}},
		Config: Config{
			Cmd:          []string{"mariadbd"},
			Env:          []string{debianPath},
			ExposedPorts: []string{"3306/tcp"},
		},
		Strip: debianStrip,
		Keep:  debianKeep,
	}
}
