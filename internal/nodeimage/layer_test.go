package nodeimage

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"io/fs"
	"strings"
	"testing"
	"time"
)

var (
	built   = time.Date(2026, 12, 7, 9, 30, 0, 0, time.UTC)
	shipped = time.Date(2026, 9, 15, 10, 37, 0, 0, time.UTC)
)

// entry is one member of a synthetic root filesystem tarball.
type entry struct {
	name     string
	typeflag byte
	mode     int64
	uid      int
	body     string
	link     string
	modTime  time.Time
}

// rootfsTar writes entries as mmdebstrap does: "./"-prefixed names, owner names set.
func rootfsTar(t *testing.T, entries []entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{
			Name: "./" + e.name, Typeflag: e.typeflag, Mode: e.mode, Uid: e.uid, Gid: e.uid,
			Uname: "root", Gname: "root", Linkname: e.link, ModTime: e.modTime, AccessTime: e.modTime,
			Format: tar.FormatPAX,
		}
		if h.ModTime.IsZero() {
			h.ModTime = shipped
		}
		if e.typeflag == tar.TypeReg {
			h.Size = int64(len(e.body))
		}
		if e.typeflag == tar.TypeChar {
			h.Devmajor, h.Devminor = 1, 3
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(e.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

const memcachedStatus = `Package: base-files
Status: install ok installed
Version: 13.8

Package: memcached
Status: install ok installed
Priority: optional
Description: high-performance memory object caching system
 Danga Interactive developed memcached.
Version: 1.6.38-1
`

// debianRootfs is a small root filesystem in the shape mmdebstrap gives: the root, /dev
// with device nodes, documentation, apt's leftovers, a server and dpkg's status.
func debianRootfs(t *testing.T) []byte {
	return rootfsTar(t, []entry{
		{name: "", typeflag: tar.TypeDir, mode: 0o755, modTime: built},
		{name: "dev/", typeflag: tar.TypeDir, mode: 0o755, modTime: built},
		{name: "dev/null", typeflag: tar.TypeChar, mode: 0o666, modTime: built},
		{name: "dev/fd", typeflag: tar.TypeSymlink, link: "/proc/self/fd", modTime: built},
		{name: "etc/", typeflag: tar.TypeDir, mode: 0o755},
		{name: "etc/hostname", typeflag: tar.TypeReg, mode: 0o644, body: "buildhost\n", modTime: built},
		{name: "etc/server/", typeflag: tar.TypeDir, mode: 0o755},
		{name: "etc/server/server.conf", typeflag: tar.TypeReg, mode: 0o644, body: "port 80\n"},
		{name: "etc/server/mime.types", typeflag: tar.TypeReg, mode: 0o644, body: "text/html html\n"},
		{name: "tmp/", typeflag: tar.TypeDir, mode: 0o1777, modTime: built},
		{name: "usr/", typeflag: tar.TypeDir, mode: 0o755},
		{name: "usr/bin/", typeflag: tar.TypeDir, mode: 0o755},
		{name: "usr/bin/memcached", typeflag: tar.TypeReg, mode: 0o755, body: "\x7fELF memcached"},
		{name: "usr/bin/memcached-again", typeflag: tar.TypeLink, link: "./usr/bin/memcached"},
		{name: "usr/share/", typeflag: tar.TypeDir, mode: 0o755},
		{name: "usr/share/doc/", typeflag: tar.TypeDir, mode: 0o755},
		{name: "usr/share/doc/memcached/", typeflag: tar.TypeDir, mode: 0o755},
		{name: "usr/share/doc/memcached/README.gz", typeflag: tar.TypeReg, mode: 0o644, body: "docs"},
		{name: "usr/share/doc/memcached/copyright", typeflag: tar.TypeReg, mode: 0o644, body: "BSD-3-Clause"},
		{name: "usr/share/man/", typeflag: tar.TypeDir, mode: 0o755},
		{name: "usr/share/man/man1/memcached.1.gz", typeflag: tar.TypeReg, mode: 0o644, body: "man"},
		{name: "var/", typeflag: tar.TypeDir, mode: 0o755},
		{name: "var/cache/apt/", typeflag: tar.TypeDir, mode: 0o755},
		{name: "var/cache/apt/pkgcache.bin", typeflag: tar.TypeReg, mode: 0o644, body: "cache", modTime: built},
		{name: "var/lib/dpkg/", typeflag: tar.TypeDir, mode: 0o755},
		{name: "var/lib/dpkg/status", typeflag: tar.TypeReg, mode: 0o644, body: memcachedStatus, modTime: built},
	})
}

// debianSpec is a spec for debianRootfs that exercises every change a layer can make.
func debianSpec() Spec {
	return Spec{
		Ref:         "docker.io/library/memcached:1.6",
		Description: "Debian trixie's memcached 1.6 standing in for the official memcached image",
		Debian:      &Debian{Suite: "trixie", Packages: []string{"memcached"}},
		Config:      Config{Entrypoint: []string{"memcached"}, User: "11211:11211", ExposedPorts: []string{"11211/tcp"}},
		Files: map[string]File{
			"/etc/server/server.conf": {Content: "port 8080\n"},
			"/usr/bin/start":          {Content: "#!/bin/sh\n", Mode: 0o755},
			"/var/log/server/err.log": {Link: "/dev/stderr"},
		},
		Writable: []string{"/etc/server", "/var/cache/server"},
		Strip:    []string{"usr/share/doc", "usr/share/man", "var/cache/apt/*", "var/lib/dpkg", "etc/hostname"},
		Keep:     []string{"usr/share/doc/*/copyright"},
	}
}

type layerEntry struct {
	h    *tar.Header
	body string
}

// readLayer returns a layer's entries by name, and their names in order.
func readLayer(t *testing.T, layer io.Reader) (map[string]layerEntry, []string) {
	t.Helper()
	entries := map[string]layerEntry{}
	var order []string
	tr := tar.NewReader(layer)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return entries, order
		}
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if _, dup := entries[h.Name]; dup {
			t.Errorf("layer holds %s twice", h.Name)
		}
		entries[h.Name] = layerEntry{h: h, body: string(body)}
		order = append(order, h.Name)
	}
}

func TestWriteLayer(t *testing.T) {
	var layer bytes.Buffer
	facts, err := writeLayer(&layer, bytes.NewReader(debianRootfs(t)), debianSpec())
	if err != nil {
		t.Fatal(err)
	}
	entries, order := readLayer(t, &layer)

	if string(facts.dpkgStatus) != memcachedStatus {
		t.Errorf("dpkg status %q, want the root filesystem's although Strip removes it", facts.dpkgStatus)
	}
	if !facts.created.Equal(built) {
		t.Errorf("created %s, want the newest kept file's time %s", facts.created, built)
	}

	absent := []string{
		"./", "/", "dev/null", "dev/fd", // the runtime's
		"etc/hostname", "usr/share/doc/memcached/README.gz", "usr/share/man/", "usr/share/man/man1/memcached.1.gz",
		"var/cache/apt/pkgcache.bin", "var/lib/dpkg/", "var/lib/dpkg/status",
	}
	for _, name := range absent {
		if _, ok := entries[name]; ok {
			t.Errorf("layer holds %s, want it left out", name)
		}
	}

	tests := map[string]struct {
		typeflag byte
		mode     int64
		uid, gid int
		body     string
		link     string
		modTime  time.Time
	}{
		"dev/":                    {typeflag: tar.TypeDir, mode: 0o755, modTime: built},
		"tmp/":                    {typeflag: tar.TypeDir, mode: 0o1777, modTime: built},
		"usr/bin/memcached":       {typeflag: tar.TypeReg, mode: 0o755, body: "\x7fELF memcached", modTime: shipped},
		"usr/bin/memcached-again": {typeflag: tar.TypeLink, link: "usr/bin/memcached", modTime: shipped},
		// Kept, with the directories Strip removed above it written back.
		"usr/share/doc/":                    {typeflag: tar.TypeDir, mode: 0o755, modTime: shipped},
		"usr/share/doc/memcached/":          {typeflag: tar.TypeDir, mode: 0o755, modTime: shipped},
		"usr/share/doc/memcached/copyright": {typeflag: tar.TypeReg, mode: 0o644, body: "BSD-3-Clause", modTime: shipped},
		// Writable: the directory and everything in it belong to the image's user.
		"etc/server/":           {typeflag: tar.TypeDir, mode: 0o755, uid: 11211, gid: 11211, modTime: shipped},
		"etc/server/mime.types": {typeflag: tar.TypeReg, mode: 0o644, uid: 11211, gid: 11211, body: "text/html html\n", modTime: shipped},
		// Replaced by the Spec's file, still in a writable directory.
		"etc/server/server.conf": {typeflag: tar.TypeReg, mode: 0o644, uid: 11211, gid: 11211, body: "port 8080\n", modTime: built},
		// Writable and missing: made.
		"var/cache/server/": {typeflag: tar.TypeDir, mode: 0o755, uid: 11211, gid: 11211, modTime: built},
		// New files, and the directories they need.
		"usr/bin/start":          {typeflag: tar.TypeReg, mode: 0o755, body: "#!/bin/sh\n", modTime: built},
		"var/log/":               {typeflag: tar.TypeDir, mode: 0o755, modTime: built},
		"var/log/server/":        {typeflag: tar.TypeDir, mode: 0o755, modTime: built},
		"var/log/server/err.log": {typeflag: tar.TypeSymlink, mode: 0o777, link: "/dev/stderr", modTime: built},
	}
	for name, want := range tests {
		got, ok := entries[name]
		if !ok {
			t.Errorf("layer lacks %s", name)
			continue
		}
		h := got.h
		if h.Typeflag != want.typeflag || h.Linkname != want.link || got.body != want.body || !h.ModTime.Equal(want.modTime) ||
			(want.typeflag != tar.TypeLink && h.Mode != want.mode) || h.Uid != want.uid || h.Gid != want.gid {
			t.Errorf("%s: type %c mode %o owner %d:%d link %q body %q time %s; want type %c mode %o owner %d:%d link %q body %q time %s",
				name, h.Typeflag, h.Mode, h.Uid, h.Gid, h.Linkname, got.body, h.ModTime,
				want.typeflag, want.mode, want.uid, want.gid, want.link, want.body, want.modTime)
		}
		if h.Uname != "" || h.Gname != "" || !h.AccessTime.IsZero() {
			t.Errorf("%s: user %q group %q access time %s, want numeric owners only and no access time", name, h.Uname, h.Gname, h.AccessTime)
		}
	}
	for _, name := range order {
		if _, ok := tests[name]; !ok && !strings.HasSuffix(name, "/") {
			t.Errorf("layer holds %s, which no test expects", name)
		}
	}
}

func TestWriteLayerIsDeterministic(t *testing.T) {
	rootfs := debianRootfs(t)
	layer := func(s Spec) []byte {
		var buf bytes.Buffer
		if _, err := writeLayer(&buf, bytes.NewReader(rootfs), s); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	first := layer(debianSpec())
	for range 3 {
		if !bytes.Equal(layer(debianSpec()), first) {
			t.Fatal("one root filesystem and one Spec gave two different layers")
		}
	}
	changed := debianSpec()
	changed.Files["/usr/bin/start"] = File{Content: "#!/bin/sh\nexec memcached\n", Mode: 0o755}
	if bytes.Equal(layer(changed), first) {
		t.Error("changing a file's content kept the layer")
	}
}

func TestWriteLayerRefusesBrokenHardLinks(t *testing.T) {
	rootfs := rootfsTar(t, []entry{
		{name: "usr/share/perl/perl", typeflag: tar.TypeReg, mode: 0o755, body: "perl"},
		{name: "usr/bin/perl", typeflag: tar.TypeLink, link: "./usr/share/perl/perl"},
	})
	s := debianSpec()
	s.Strip = []string{"usr/share/perl"}
	_, err := writeLayer(io.Discard, bytes.NewReader(rootfs), s)
	if err == nil || !strings.Contains(err.Error(), "usr/bin/perl") {
		t.Errorf("error %v, want one naming the hard link whose target Strip removed", err)
	}
}

func TestWriteLayerDirs(t *testing.T) {
	rootfs := rootfsTar(t, []entry{
		{name: "run/", typeflag: tar.TypeDir, mode: 0o755},
		{name: "var/", typeflag: tar.TypeDir, mode: 0o755},
		{name: "var/run", typeflag: tar.TypeSymlink, link: "/run"},
		{name: "var/lib/db/", typeflag: tar.TypeDir, mode: 0o755, uid: 101},
		{name: "var/lib/db/README", typeflag: tar.TypeReg, mode: 0o644, body: "data"},
		{name: "etc/db.conf", typeflag: tar.TypeReg, mode: 0o644, body: "x"},
	})
	s := debianSpec()
	s.Dirs = map[string]Dir{
		"/var/lib/db":     {UID: 999, GID: 999, Mode: 0o777 | fs.ModeSticky},
		"run/db/sockets/": {UID: 999, GID: 998, Mode: 0o777 | fs.ModeSetgid | fs.ModeSticky},
		"srv/db":          {UID: 999, GID: 999},
	}
	var layer bytes.Buffer
	if _, err := writeLayer(&layer, bytes.NewReader(rootfs), s); err != nil {
		t.Fatal(err)
	}
	entries, _ := readLayer(t, &layer)
	for name, want := range map[string]struct {
		mode     int64
		uid, gid int
	}{
		"var/lib/db/":       {0o1777, 999, 999}, // changed
		"var/lib/db/README": {0o644, 0, 0},      // left as it was
		"run/db/":           {0o755, 0, 0},      // made, as a parent
		"run/db/sockets/":   {0o3777, 999, 998}, // made
		"srv/":              {0o755, 0, 0},
		"srv/db/":           {0o755, 999, 999}, // zero mode is 0755
	} {
		got, ok := entries[name]
		if !ok {
			t.Errorf("layer lacks %s", name)
			continue
		}
		if got.h.Mode != want.mode || got.h.Uid != want.uid || got.h.Gid != want.gid {
			t.Errorf("%s: mode %o owner %d:%d, want mode %o owner %d:%d", name, got.h.Mode, got.h.Uid, got.h.Gid, want.mode, want.uid, want.gid)
		}
	}

	for dir, wantErr := range map[string]string{"var/run/db": "var/run is not a directory", "etc/db.conf": "not as a directory"} {
		s.Dirs = map[string]Dir{dir: {UID: 999, GID: 999}}
		if _, err := writeLayer(io.Discard, bytes.NewReader(rootfs), s); err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("Dirs %s: error %v, want one saying %q", dir, err, wantErr)
		}
	}
}
