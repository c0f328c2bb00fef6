package nodeimage

import (
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestPackageVersions(t *testing.T) {
	status := `Package: nginx
Status: install ok installed
Version: 1.26.3-3+deb13u10
Description: small, powerful, scalable web/proxy server
 Nginx ("engine X") is a high-performance web and reverse proxy server
 Version: 9.9 is not a field here.

Package: busybox-static
Version: 1:1.37.0-6+b9
Status: install ok unpacked

Package: removed
Status: deinstall ok config-files
Version: 1.0-1

Package: half
Status: install reinstreq half-installed
Version: 2.0-1
`
	got := packageVersions([]byte(status))
	want := map[string]string{"nginx": "1.26.3-3+deb13u10", "busybox-static": "1:1.37.0-6+b9"}
	if !maps.Equal(got, want) {
		t.Errorf("versions %v, want %v", got, want)
	}
}

func TestTagNamesVersion(t *testing.T) {
	tests := map[string]struct {
		tag, version string
		want         bool
	}{
		"major.minor":           {"1.26", "1.26.3-3+deb13u10", true},
		"major":                 {"18", "18.6-3", true},
		"epoch":                 {"1.37", "1:1.37.0-6+b9", true},
		"repacked source":       {"11.8", "1:11.8.9+ds-0+deb13u1", true},
		"whole upstream":        {"1.6.38", "1.6.38-1", true},
		"another minor":         {"1.2", "1.26.3-3", false},
		"another major":         {"17", "18.6-3", false},
		"pre-release":           {"18", "18~beta1-1", false},
		"revision is not a tag": {"1.6.38-1", "1.6.38-1", false},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if got := tagNamesVersion(tt.tag, tt.version); got != tt.want {
				t.Errorf("tagNamesVersion(%q, %q) = %v, want %v", tt.tag, tt.version, got, tt.want)
			}
		})
	}
}

func TestMirrorInAptSources(t *testing.T) {
	deb822 := `Types: deb
# http://snapshot.debian.org/archive/debian-security/20250520T000000Z
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main

Types: deb-src
URIs: http://sources.example/debian
Suites: bookworm

Types: deb
URIs: http://mirror.example/debian/
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
`
	if got := mirrorInSources(deb822); got != "http://mirror.example/debian" {
		t.Errorf("deb822 mirror %q, want the release's, without the trailing slash", got)
	}
	oneLine := `# deb http://commented.example/debian bookworm main
deb http://security.debian.org/debian-security bookworm-security main
deb [arch=amd64 signed-by=/usr/share/keyrings/debian.gpg] http://mirror.example/debian bookworm main contrib
`
	if got := mirrorInSourcesList(oneLine); got != "http://mirror.example/debian" {
		t.Errorf("sources.list mirror %q, want the release's", got)
	}
	if got := mirrorInSources("Types: deb\nURIs: http://x.example/debian\nSuites: bookworm\nEnabled: no\n"); got != "" {
		t.Errorf("disabled source gave %q", got)
	}
}

func TestMmdebstrapArgs(t *testing.T) {
	installed := mmdebstrapArgs(Debian{Suite: "trixie", Packages: []string{"mariadb-server", "mariadb-client"}}, "http://m.example/debian", "/w/rootfs.tar")
	if !slices.Contains(installed, "--variant=essential") || !slices.Contains(installed, "--include=mariadb-server,mariadb-client") {
		t.Errorf("args %q, want the essential variant including both packages", installed)
	}
	if tail := installed[len(installed)-3:]; !slices.Equal(tail, []string{"trixie", "/w/rootfs.tar", "deb http://m.example/debian trixie main"}) {
		t.Errorf("args end %q, want suite, target, source", tail)
	}

	extracted := mmdebstrapArgs(Debian{Suite: "trixie", Packages: []string{"busybox-static"}, Extract: true, Hooks: []string{"--extract-hook=true"}}, "http://m.example/debian", "/w/rootfs.tar")
	statusHook := slices.IndexFunc(extracted, func(a string) bool {
		return strings.HasPrefix(a, "--extract-hook=") && strings.Contains(a, "dpkg-deb --field") && strings.Contains(a, dpkgStatus)
	})
	if !slices.Contains(extracted, "--variant=extract") || statusHook < 0 {
		t.Errorf("args %q, want the extract variant and a hook that records versions in %s", extracted, dpkgStatus)
	}
	if own := slices.Index(extracted, "--extract-hook=true"); own < statusHook {
		t.Errorf("the Spec's hooks run before the status is recorded: %q", extracted)
	}
}

func TestMmdebstrapArgsMakeUsersFirst(t *testing.T) {
	d := Debian{
		Suite: "sid", Packages: []string{"postgresql-18"},
		Users: []User{{Name: "postgres", ID: 999, Home: "/var/lib/postgresql", Shell: "/bin/bash"}, {Name: "backup2", ID: 998, Home: "/nonexistent", Shell: "/usr/sbin/nologin"}},
		Hooks: []string{"--essential-hook=true"},
	}
	args := mmdebstrapArgs(d, "http://m.example/debian", "/w/rootfs.tar")
	hook := slices.IndexFunc(args, func(a string) bool {
		return strings.HasPrefix(a, "--essential-hook=") && strings.Contains(a, "postgres:*:999:999::/var/lib/postgresql:/bin/bash")
	})
	if hook < 0 || hook > slices.Index(args, "--essential-hook=true") {
		t.Fatalf("args %q, want a hook that makes the users before the Spec's own hooks", args)
	}

	// Run the hook as mmdebstrap does (sh -c HOOK exec ROOT) on base-passwd's files.
	run := func(passwd, group string) (string, string, error) {
		root := t.TempDir()
		if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
			t.Fatal(err)
		}
		for name, content := range map[string]string{"passwd": passwd, "group": group} {
			if err := os.WriteFile(filepath.Join(root, "etc", name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		out, err := exec.Command("sh", "-c", strings.TrimPrefix(args[hook], "--essential-hook="), "exec", root).CombinedOutput()
		p, _ := os.ReadFile(filepath.Join(root, "etc", "passwd"))
		g, _ := os.ReadFile(filepath.Join(root, "etc", "group"))
		return string(p) + string(g), string(out), err
	}
	const basePasswd, baseGroup = "root:*:0:0:root:/root:/bin/bash\nbackup:*:34:34:backup:/var/backups:/usr/sbin/nologin\n", "root:*:0:\nbackup:*:34:\n"
	files, out, err := run(basePasswd, baseGroup)
	if err != nil {
		t.Fatalf("hook failed: %v: %s", err, out)
	}
	want := basePasswd + "postgres:*:999:999::/var/lib/postgresql:/bin/bash\nbackup2:*:998:998::/nonexistent:/usr/sbin/nologin\n" +
		baseGroup + "postgres:*:999:\nbackup2:*:998:\n"
	if files != want {
		t.Errorf("passwd and group:\n%s\nwant:\n%s", files, want)
	}

	for name, taken := range map[string][2]string{
		"a user's name":  {basePasswd + "postgres:*:101:101::/:/bin/sh\n", baseGroup},
		"a group's name": {basePasswd, baseGroup + "postgres:*:101:\n"},
		"a user's id":    {basePasswd + "lp:*:999:7::/:/bin/sh\n", baseGroup},
		"a group's id":   {basePasswd, baseGroup + "lpadmin:*:998:\n"},
	} {
		if _, out, err := run(taken[0], taken[1]); err == nil || !strings.HasPrefix(out, "E: ") {
			t.Errorf("%s taken: hook said %q (%v), want an E: line and a failure", name, out, err)
		}
	}
}
