package nodeimage

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"strconv"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
)

// recipeVersion is part of every cache key: change it whenever the way an image is made
// from its Spec changes (mmdebstrap's arguments, the layer's assembly, the archive's
// format), so that no cached archive made the old way is used again.
const recipeVersion = "nodeimage/1"

// Spec describes one image: where its files come from, what to change in them, and how
// it runs.
type Spec struct {
	// Ref is the reference the cluster's pods use, e.g. "docker.io/library/busybox:1.37".
	// Its tag must name the version of what is inside (see Debian.Packages).
	Ref string `json:"ref"`
	// Description says what the image really is, e.g. "Debian trixie's memcached
	// standing in for the official memcached image"; it becomes the
	// org.opencontainers.image.description annotation and label.
	Description string `json:"description"`
	// OnDemand images are big and needed by few tests: EnsureAll leaves them out unless
	// asked for by name, so that a cluster's first start builds only the small ones.
	OnDemand bool `json:"-"`

	// Debian, when set, makes the root filesystem from Debian's packages. Exactly one of
	// Debian and Go is set.
	Debian *Debian `json:"debian,omitempty"`
	// Go, when set, makes the image of one static Go program and nothing else.
	Go *GoProgram `json:"go,omitempty"`

	// Config is how the image runs.
	Config Config `json:"config"`
	// Files are added to the root filesystem, replacing what is there. Their parent
	// directories are made (owned by root, mode 0755) when missing.
	Files map[string]File `json:"files,omitempty"`
	// Writable are directories made writable for Config.User: each, and everything under
	// it, is owned by that user and group (the directory is made when missing).
	Writable []string `json:"writable,omitempty"`
	// Dirs are directories with an owner and a mode of their own, whatever Config.User
	// is: made when missing, their own entry changed when the root filesystem has them
	// (what is in them stays as it is). For what an upstream image makes at build time and Debian
	// only at boot, such as a database's socket directory under /run, which mmdebstrap
	// empties. A path must not lead through a symbolic link: "run/postgresql", not
	// "var/run/postgresql".
	Dirs map[string]Dir `json:"dirs,omitempty"`
	// Strip are paths left out of the layer, with everything under them, to keep it
	// small: documentation, manual pages, apt's lists and caches. Each is a path.Match
	// pattern over a path relative to the root, e.g. "usr/share/doc" or "var/log/*.log".
	Strip []string `json:"strip,omitempty"`
	// Keep are paths kept although Strip matches them (patterns as in Strip), e.g. the
	// copyright files Debian's licences ask to stay beside the binaries. The directories
	// above a kept file that Strip removes are written back owned by root, mode 0755.
	Keep []string `json:"keep,omitempty"`
}

// Debian says which Debian packages make an image's root filesystem.
type Debian struct {
	// Suite is the Debian release: "trixie", "sid", "bookworm".
	Suite string `json:"suite"`
	// Packages are installed with their dependencies. The first is the image's
	// software: its version is the image's org.opencontainers.image.version, and the
	// tag of Spec.Ref must be that version's upstream part or a prefix of it (1.26 for
	// 1.26.3-3).
	Packages []string `json:"packages"`
	// Extract, instead of installing the packages on top of Debian's essential set,
	// only unpacks their files (mmdebstrap's extract variant): right for a package that
	// is one static binary, such as busybox-static, whose image should hold nothing else.
	Extract bool `json:"extract,omitempty"`
	// Users are system users, each with a group of its name and number, written into
	// the essential set's /etc/passwd and /etc/group before the packages install, so
	// that their maintainer scripts find them instead of making them with whatever
	// system id is free: how an official image fixes its users' ids (its Dockerfile runs
	// groupadd and useradd before apt-get install). Not for the extract variant, which
	// runs no maintainer scripts.
	Users []User `json:"users,omitempty"`
	// Hooks are extra mmdebstrap hook options, given as they are, e.g.
	// `--extract-hook=chroot "$1" /usr/bin/busybox --install -s`. They run after the
	// ones that make Users, so they may name them.
	Hooks []string `json:"hooks,omitempty"`
}

// User is a system user whose primary group has its name and number, as
// `groupadd --gid ID NAME && useradd --uid ID --gid ID --home-dir HOME --shell SHELL NAME`
// makes them (without a password, and without making the home directory).
type User struct {
	Name string `json:"name"`
	// ID is the user's and the group's number.
	ID    int    `json:"id"`
	Home  string `json:"home"`
	Shell string `json:"shell"`
}

// Dir is a directory's owner and mode.
type Dir struct {
	UID int `json:"uid"`
	GID int `json:"gid"`
	// Mode is its permission bits, with fs.ModeSetgid, fs.ModeSetuid and fs.ModeSticky
	// when wanted; zero is 0755.
	Mode fs.FileMode `json:"mode,omitempty"`
}

// tarMode is d's mode as a tar header (and stat) gives it: 0o3777 for a setgid,
// sticky, world-writable directory.
func (d Dir) tarMode() int64 {
	if d.Mode == 0 {
		return 0o755
	}
	mode := int64(d.Mode.Perm())
	for bit, unix := range map[fs.FileMode]int64{fs.ModeSetuid: 0o4000, fs.ModeSetgid: 0o2000, fs.ModeSticky: 0o1000} {
		if d.Mode&bit != 0 {
			mode |= unix
		}
	}
	return mode
}

// GoProgram is a Go main package built statically (CGO_ENABLED=0, -trimpath) and
// installed as /<Name>.
type GoProgram struct {
	// Name is the binary's file name.
	Name string `json:"name"`
	// Source is the program's only file, main.go; it may import the standard library
	// only, since it is built outside any module.
	Source []byte `json:"source"`
}

// Config is an image's run configuration (the OCI image config's "config" object).
type Config struct {
	// Entrypoint is the program a container runs; a pod's command replaces it.
	Entrypoint []string `json:"entrypoint,omitempty"`
	// Cmd are its default arguments (or the program, without an Entrypoint); a pod's
	// args replace them.
	Cmd []string `json:"cmd,omitempty"`
	// User is numeric, "uid" or "uid:gid": a pod that sets runAsNonRoot without
	// runAsUser can only start an image whose user the kubelet can check without its
	// /etc/passwd. Empty is root.
	User string `json:"user,omitempty"`
	// Env are "NAME=value" variables, PATH among them: nothing adds a default one.
	Env []string `json:"env,omitempty"`
	// WorkingDir is where the process starts; empty is /.
	WorkingDir string `json:"workingDir,omitempty"`
	// ExposedPorts are "port/protocol", e.g. "8080/tcp".
	ExposedPorts []string `json:"exposedPorts,omitempty"`
	// StopSignal is the signal that asks the process to stop, e.g. "SIGQUIT"; empty is
	// SIGTERM.
	StopSignal string `json:"stopSignal,omitempty"`
}

// File is a regular file or, when Link is set, a symbolic link.
type File struct {
	// Content is a regular file's bytes.
	Content string `json:"content,omitempty"`
	// Mode is the file's permission bits; zero is 0644.
	Mode fs.FileMode `json:"mode,omitempty"`
	// Link is the symbolic link's target.
	Link string `json:"link,omitempty"`
}

// StandIn reports whether the image stands in for an upstream image of the same name:
// every Debian-built image does; a Go program's image is its own.
func (s Spec) StandIn() bool { return s.Debian != nil }

// Tag is the tag of s.Ref.
func (s Spec) Tag() string {
	tag, err := name.NewTag(s.Ref, name.StrictValidation)
	if err != nil {
		return ""
	}
	return tag.TagStr()
}

// Key identifies what building s from mirror makes: the hash of the recipe's version,
// the mirror (for a Debian image) and everything in s that changes the archive. Two
// specs with one key give the same image, up to the versions the mirror serves at the
// time.
func (s Spec) Key(mirror string) string {
	if s.Debian == nil {
		mirror = ""
	}
	recipe, err := json.Marshal(s)
	if err != nil {
		// Spec holds only strings, slices and maps of them: it always marshals.
		panic(fmt.Sprintf("nodeimage: marshal spec %s: %v", s.Ref, err))
	}
	h := sha256.New()
	for _, part := range [][]byte{[]byte(recipeVersion), []byte(mirror), recipe} {
		h.Write(part)
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Validate reports the first thing that keeps s from being built.
func (s Spec) Validate() error {
	if _, err := name.NewTag(s.Ref, name.StrictValidation); err != nil {
		return fmt.Errorf("reference %q must be a full name with a tag, e.g. docker.io/library/busybox:1.37: %w", s.Ref, err)
	}
	if s.Description == "" {
		return errors.New("description is empty: say what the image really is")
	}
	switch {
	case (s.Debian == nil) == (s.Go == nil):
		return errors.New("exactly one of Debian and Go must say where the files come from")
	case s.Debian != nil && (s.Debian.Suite == "" || len(s.Debian.Packages) == 0):
		return errors.New("a Debian image needs a suite and at least one package")
	case s.Go != nil && (s.Go.Name == "" || path.Base(s.Go.Name) != s.Go.Name || len(s.Go.Source) == 0):
		return errors.New("a Go program needs a plain file name and its source")
	}
	if s.Debian != nil {
		if err := validateUsers(*s.Debian); err != nil {
			return err
		}
	}
	if _, _, err := s.Config.owner(); err != nil {
		return err
	}
	for p, d := range s.Dirs {
		if relative(p) == "" {
			return fmt.Errorf("directory %q: not a path under the root", p)
		}
		if d.UID < 0 || d.GID < 0 {
			return fmt.Errorf("directory %q: owner %d:%d is not a user and group number", p, d.UID, d.GID)
		}
		if d.Mode&^(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky) != 0 {
			return fmt.Errorf("directory %q: mode %v has more than permission, setuid, setgid and sticky bits", p, d.Mode)
		}
	}
	for p, f := range s.Files {
		if relative(p) == "" {
			return fmt.Errorf("file %q: not a path under the root", p)
		}
		if f.Link != "" && f.Content != "" {
			return fmt.Errorf("file %q: a symbolic link has no content", p)
		}
	}
	for _, pattern := range append(append([]string{}, s.Strip...), s.Keep...) {
		if _, err := path.Match(pattern, ""); err != nil {
			return fmt.Errorf("pattern %q: %w", pattern, err)
		}
	}
	return nil
}

var (
	userName = regexp.MustCompile(`^[a-z_][a-z0-9_-]*$`)
	userPath = regexp.MustCompile(`^/[A-Za-z0-9._/-]*$`)
)

// validateUsers reports the first of d's users that cannot be made as asked.
func validateUsers(d Debian) error {
	if len(d.Users) > 0 && d.Extract {
		return errors.New("users are made before the packages install, which the extract variant does not do")
	}
	names, ids := map[string]bool{}, map[int]bool{}
	for _, u := range d.Users {
		switch {
		case !userName.MatchString(u.Name):
			return fmt.Errorf("user %q: a user name is lower case letters, digits, _ and -", u.Name)
		case u.ID < 1 || u.ID > 65533:
			return fmt.Errorf("user %s: id %d is not a user's (1 to 65533)", u.Name, u.ID)
		case !userPath.MatchString(u.Home) || !userPath.MatchString(u.Shell):
			return fmt.Errorf("user %s: home %q and shell %q must be absolute paths of letters, digits and ._/-", u.Name, u.Home, u.Shell)
		case names[u.Name] || ids[u.ID]:
			return fmt.Errorf("user %s: its name or id %d is taken by another of the image's users", u.Name, u.ID)
		}
		names[u.Name], ids[u.ID] = true, true
	}
	return nil
}

// owner is the numeric user and group of c.User; the group defaults to the user's
// number, as for a user whose primary group has its own number.
func (c Config) owner() (uid, gid int, err error) {
	if c.User == "" {
		return 0, 0, nil
	}
	u, g, hasGroup := strings.Cut(c.User, ":")
	if !hasGroup {
		g = u
	}
	uid, errU := strconv.Atoi(u)
	gid, errG := strconv.Atoi(g)
	if errU != nil || errG != nil || uid < 0 || gid < 0 {
		return 0, 0, fmt.Errorf("user %q must be numeric, uid or uid:gid: runAsNonRoot cannot check a user name", c.User)
	}
	return uid, gid, nil
}

// relative turns a path in a root filesystem ("/etc/x", "./etc/x", "etc/x/") into the
// form a layer uses ("etc/x"); the root itself is "".
func relative(p string) string {
	p = path.Clean("/" + p)
	return strings.TrimPrefix(p, "/")
}
