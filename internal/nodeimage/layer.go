package nodeimage

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"path"
	"slices"
	"strings"
	"time"
)

// dpkgStatus is where dpkg records what is installed; the image's version comes from it.
const dpkgStatus = "var/lib/dpkg/status"

// rootfsFacts is what assembling a layer learned about the root filesystem.
type rootfsFacts struct {
	// dpkgStatus is the root filesystem's dpkg status file, read before Strip applies
	// (an image may well leave dpkg's database out).
	dpkgStatus []byte
	// created is the newest modification time in the layer: when the newest of its
	// files was made. It stamps the files the Spec adds and the image config, so that
	// one root filesystem always gives one digest.
	created time.Time
}

// writeLayer copies the root filesystem tar rootfs to w as the image's layer: without
// the device nodes and whatever s.Strip removes, with s.Files added, with s.Writable
// owned by the image's user, and with s.Dirs' owners and modes. Entries keep the order
// and metadata they had (names made relative, access and change times and user names
// dropped), so one input always gives the same bytes.
func writeLayer(w io.Writer, rootfs io.Reader, s Spec) (rootfsFacts, error) {
	uid, gid, err := s.Config.owner()
	if err != nil {
		return rootfsFacts{}, err
	}
	l := &layerWriter{
		tw:       tar.NewWriter(w),
		uid:      uid,
		gid:      gid,
		written:  map[string]byte{},
		writable: cleanAll(s.Writable),
		strip:    cleanAll(s.Strip),
		keep:     cleanAll(s.Keep),
		files:    map[string]File{},
		dirs:     map[string]Dir{},
	}
	for p, f := range s.Files {
		l.files[relative(p)] = f
	}
	for p, d := range s.Dirs {
		l.dirs[relative(p)] = d
	}
	var facts rootfsFacts
	tr := tar.NewReader(rootfs)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return rootfsFacts{}, fmt.Errorf("read root filesystem: %w", err)
		}
		name := relative(h.Name)
		var body io.Reader = tr
		if name == dpkgStatus {
			if facts.dpkgStatus, err = io.ReadAll(tr); err != nil {
				return rootfsFacts{}, fmt.Errorf("read %s: %w", name, err)
			}
			body = bytes.NewReader(facts.dpkgStatus)
		}
		if !l.keeps(name, h) {
			continue
		}
		h.ModTime = h.ModTime.Truncate(time.Second)
		if h.ModTime.After(facts.created) {
			facts.created = h.ModTime
		}
		if err := l.parents(name, h.ModTime); err != nil {
			return rootfsFacts{}, err
		}
		if err := l.write(name, h, body); err != nil {
			return rootfsFacts{}, err
		}
	}
	for _, dir := range l.writable {
		if _, ok := l.written[dir]; ok {
			continue
		}
		if err := l.parents(dir, facts.created); err != nil {
			return rootfsFacts{}, err
		}
		h := &tar.Header{Typeflag: tar.TypeDir, Mode: 0o755, ModTime: facts.created}
		if err := l.write(dir, h, nil); err != nil {
			return rootfsFacts{}, err
		}
	}
	for _, dir := range slices.Sorted(maps.Keys(l.dirs)) {
		if _, ok := l.written[dir]; ok {
			continue
		}
		for p := path.Dir(dir); p != "."; p = path.Dir(p) {
			if typeflag, ok := l.written[p]; ok && typeflag != tar.TypeDir {
				return rootfsFacts{}, fmt.Errorf("directory %s: %s is not a directory in the root filesystem (a symbolic link?)", dir, p)
			}
		}
		if err := l.parents(dir, facts.created); err != nil {
			return rootfsFacts{}, err
		}
		if err := l.write(dir, &tar.Header{Typeflag: tar.TypeDir, ModTime: facts.created}, nil); err != nil {
			return rootfsFacts{}, err
		}
	}
	for _, name := range slices.Sorted(maps.Keys(l.files)) {
		f := l.files[name]
		if err := l.parents(name, facts.created); err != nil {
			return rootfsFacts{}, err
		}
		h := &tar.Header{Typeflag: tar.TypeReg, Mode: int64(f.Mode.Perm()), Size: int64(len(f.Content)), ModTime: facts.created}
		if f.Mode == 0 {
			h.Mode = 0o644
		}
		if f.Link != "" {
			h.Typeflag, h.Mode, h.Size, h.Linkname = tar.TypeSymlink, 0o777, 0, f.Link
		}
		if err := l.write(name, h, strings.NewReader(f.Content)); err != nil {
			return rootfsFacts{}, err
		}
	}
	if err := l.tw.Close(); err != nil {
		return rootfsFacts{}, fmt.Errorf("finish layer: %w", err)
	}
	return facts, nil
}

// layerWriter writes a layer's entries and remembers what it wrote.
type layerWriter struct {
	tw       *tar.Writer
	uid, gid int
	// written holds every name written, with its tar type flag.
	written  map[string]byte
	writable []string
	strip    []string
	keep     []string
	files    map[string]File
	dirs     map[string]Dir
}

// keeps reports whether the root filesystem's entry name belongs in the layer.
func (l *layerWriter) keeps(name string, h *tar.Header) bool {
	switch {
	case name == "":
		// The root directory is the runtime's.
		return false
	case strings.HasPrefix(name, "dev/"), h.Typeflag == tar.TypeChar, h.Typeflag == tar.TypeBlock, h.Typeflag == tar.TypeFifo:
		// The runtime mounts its own /dev; device nodes in a layer only break rootless
		// unpacking.
		return false
	}
	if _, replaced := l.files[name]; replaced {
		return false
	}
	return !matchesSelfOrParent(l.strip, name) || matchesSelfOrParent(l.keep, name)
}

// parents writes the directories above name that the layer does not hold yet (because
// Strip removed them, or because a Spec's file or writable directory is new), owned by
// root with mode 0755.
func (l *layerWriter) parents(name string, modTime time.Time) error {
	dir := path.Dir(name)
	if dir == "." {
		return nil
	}
	if _, ok := l.written[dir]; ok {
		return nil
	}
	if err := l.parents(dir, modTime); err != nil {
		return err
	}
	return l.write(dir, &tar.Header{Typeflag: tar.TypeDir, Mode: 0o755, ModTime: modTime}, nil)
}

// write writes one entry under name, owned by the image's user when it is in a writable
// directory.
func (l *layerWriter) write(name string, h *tar.Header, body io.Reader) error {
	h.Name = name
	if h.Typeflag == tar.TypeDir {
		h.Name += "/"
	}
	if h.Typeflag == tar.TypeLink {
		target := relative(h.Linkname)
		if l.written[target] != tar.TypeReg {
			return fmt.Errorf("hard link %s: its target %s is not in the layer (stripped?)", name, target)
		}
		h.Linkname = target
	}
	if matchesSelfOrParent(l.writable, name) {
		h.Uid, h.Gid = l.uid, l.gid
	}
	if d, ok := l.dirs[name]; ok {
		if h.Typeflag != tar.TypeDir {
			return fmt.Errorf("directory %s: the root filesystem has it, not as a directory", name)
		}
		h.Uid, h.Gid, h.Mode = d.UID, d.GID, d.tarMode()
	}
	h.Uname, h.Gname = "", ""
	h.AccessTime, h.ChangeTime = time.Time{}, time.Time{}
	h.Format = tar.FormatUnknown
	h.PAXRecords = extendedAttributes(h.PAXRecords)
	if err := l.tw.WriteHeader(h); err != nil {
		return fmt.Errorf("layer entry %s: %w", name, err)
	}
	if h.Typeflag == tar.TypeReg && body != nil {
		if _, err := io.Copy(l.tw, body); err != nil {
			return fmt.Errorf("layer entry %s: %w", name, err)
		}
	}
	l.written[name] = h.Typeflag
	return nil
}

// extendedAttributes keeps only the PAX records that carry extended attributes (file
// capabilities such as ping's); times and names come from the header's own fields.
func extendedAttributes(records map[string]string) map[string]string {
	var kept map[string]string
	for k, v := range records {
		if strings.HasPrefix(k, "SCHILY.xattr.") {
			if kept == nil {
				kept = map[string]string{}
			}
			kept[k] = v
		}
	}
	return kept
}

// matchesSelfOrParent reports whether one of patterns matches name or a directory
// above it.
func matchesSelfOrParent(patterns []string, name string) bool {
	for p := name; p != "." && p != ""; p = path.Dir(p) {
		for _, pattern := range patterns {
			if ok, _ := path.Match(pattern, p); ok {
				return true
			}
		}
	}
	return false
}

func cleanAll(paths []string) []string {
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		out = append(out, relative(p))
	}
	return out
}
