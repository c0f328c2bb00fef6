package nodeimage

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// DefaultMirror is Debian's own redirector, used when the machine's apt sources name no
// Debian mirror.
const DefaultMirror = "http://deb.debian.org/debian"

// AptMirror returns the Debian mirror this machine's apt uses: the first URI of a
// source for a Debian release (not its -security or -updates suites) in
// /etc/apt/sources.list.d/*.sources or /etc/apt/sources.list, else DefaultMirror. A
// machine without internet access reaches no other.
func AptMirror() string {
	files, _ := filepath.Glob("/etc/apt/sources.list.d/*.sources")
	slices.Sort(files)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if uri := mirrorInSources(string(data)); uri != "" {
			return uri
		}
	}
	if data, err := os.ReadFile("/etc/apt/sources.list"); err == nil {
		if uri := mirrorInSourcesList(string(data)); uri != "" {
			return uri
		}
	}
	return DefaultMirror
}

// mirrorInSources reads deb822 ".sources" stanzas (Types, URIs, Suites fields).
func mirrorInSources(text string) string {
	for _, stanza := range strings.Split(text, "\n\n") {
		fields := map[string]string{}
		for _, line := range strings.Split(stanza, "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && !strings.HasPrefix(line, "#") && !strings.HasPrefix(line, " ") {
				fields[strings.ToLower(strings.TrimSpace(k))] = strings.TrimSpace(v)
			}
		}
		if !slices.Contains(strings.Fields(fields["types"]), "deb") || fields["enabled"] == "no" {
			continue
		}
		uris := strings.Fields(fields["uris"])
		if len(uris) > 0 && hasRelease(strings.Fields(fields["suites"])) {
			return strings.TrimSuffix(uris[0], "/")
		}
	}
	return ""
}

// mirrorInSourcesList reads one-line "deb [options] uri suite components" entries.
func mirrorInSourcesList(text string) string {
	for _, line := range strings.Split(text, "\n") {
		fields := strings.Fields(line)
		if len(fields) < 3 || fields[0] != "deb" {
			continue
		}
		fields = fields[1:]
		if strings.HasPrefix(fields[0], "[") {
			// Options run up to the field that ends with "]".
			end := slices.IndexFunc(fields, func(f string) bool { return strings.HasSuffix(f, "]") })
			if end < 0 || end+2 >= len(fields) {
				continue
			}
			fields = fields[end+1:]
		}
		if hasRelease(fields[1:2]) {
			return strings.TrimSuffix(fields[0], "/")
		}
	}
	return ""
}

// hasRelease reports whether suites name a release ("bookworm", "stable") rather than
// only its updates ("bookworm-security", "bookworm-updates"), which live elsewhere or
// hold a few packages.
func hasRelease(suites []string) bool {
	return slices.ContainsFunc(suites, func(s string) bool { return !strings.Contains(s, "-") && !strings.Contains(s, "/") })
}

// mmdebstrapArgs are the arguments that make d's root filesystem as a tarball at out.
func mmdebstrapArgs(d Debian, mirror, out string) []string {
	variant := "essential"
	if d.Extract {
		variant = "extract"
	}
	args := []string{
		"--variant=" + variant,
		"--include=" + strings.Join(d.Packages, ","),
		`--aptopt=Acquire::Retries "3"`,
		// An offline machine's mirror is a snapshot, and the snapshot of a suite that
		// changes daily (sid) outlives its Release file's Valid-Until within a week.
		// The signatures are still checked.
		`--aptopt=Acquire::Check-Valid-Until "false"`,
	}
	if d.Extract {
		// Nothing configures extracted packages, so dpkg records none of them; write
		// down what was unpacked (the .deb files are still in apt's cache at this point)
		// in dpkg's own format, which is where an image's version is read from.
		args = append(args, `--extract-hook=mkdir -p "$1/var/lib/dpkg" && `+
			`for deb in "$1"/var/cache/apt/archives/*.deb; do `+
			`dpkg-deb --field "$deb" Package Version && echo "Status: install ok unpacked" && echo; `+
			`done > "$1/`+dpkgStatus+`"`)
	}
	if len(d.Users) > 0 {
		args = append(args, usersHook(d.Users))
	}
	args = append(args, d.Hooks...)
	return append(args, d.Suite, out, fmt.Sprintf("deb %s %s main", mirror, d.Suite))
}

// usersHook is the essential hook that adds users to the essential set's /etc/passwd
// and /etc/group, in base-passwd's format ("*" for no password; the passwd package's
// postinst moves it to /etc/shadow as it does for every other user), after checking
// that no user or group has their names or numbers yet. Nothing else runs at that
// point: useradd comes with the passwd package, which the essential set does not hold.
func usersHook(users []User) string {
	script := []string{"set -e"}
	for _, u := range users {
		script = append(script, fmt.Sprintf(
			`if grep -q -e '^%[1]s:' -e '^[^:]*:[^:]*:%[2]d:' "$1/etc/passwd" "$1/etc/group"; then `+
				`echo 'E: the essential set already has a user or group named %[1]s or numbered %[2]d' >&2; exit 1; fi; `+
				`echo '%[1]s:*:%[2]d:%[2]d::%[3]s:%[4]s' >> "$1/etc/passwd"; echo '%[1]s:*:%[2]d:' >> "$1/etc/group"`,
			u.Name, u.ID, u.Home, u.Shell))
	}
	return "--essential-hook=" + strings.Join(script, "; ")
}

// packageVersions reads a dpkg status file: the version of every package dpkg has
// installed or (for an extracted root filesystem) unpacked.
func packageVersions(status []byte) map[string]string {
	versions := map[string]string{}
	var pkg, version, state string
	flush := func() {
		if pkg != "" && version != "" && (strings.HasSuffix(state, " installed") || strings.HasSuffix(state, " unpacked")) {
			versions[pkg] = version
		}
		pkg, version, state = "", "", ""
	}
	sc := bufio.NewScanner(bytes.NewReader(status))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			flush()
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok || strings.HasPrefix(line, " ") {
			continue
		}
		switch v = strings.TrimSpace(v); k {
		case "Package":
			pkg = v
		case "Version":
			version = v
		case "Status":
			state = v
		}
	}
	flush()
	return versions
}

// upstreamVersion is the upstream part of a Debian version: without the epoch
// ("1:1.37.0-6" is 1.37.0) and the Debian revision ("1.26.3-3+deb13u1" is 1.26.3).
func upstreamVersion(v string) string {
	if epoch, rest, ok := strings.Cut(v, ":"); ok && strings.Trim(epoch, "0123456789") == "" {
		v = rest
	}
	if i := strings.LastIndex(v, "-"); i > 0 {
		v = v[:i]
	}
	return v
}

// tagNamesVersion reports whether an image tag names a Debian version: it is the
// upstream version or its leading release numbers (1.26 and 1 name 1.26.3; 18 names
// 18.1; 1.2 does not name 1.26.3, nor 18 a pre-release 18~beta1).
func tagNamesVersion(tag, version string) bool {
	up := upstreamVersion(version)
	return up == tag || strings.HasPrefix(up, tag+".")
}
