package nodeimage

import (
	"maps"
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
