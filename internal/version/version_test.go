package version

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestGet(t *testing.T) {
	const rev = "0123456789abcdef0123456789abcdef01234567"
	built := func(mainVersion string, settings ...string) func() (*debug.BuildInfo, bool) {
		return func() (*debug.BuildInfo, bool) {
			bi := &debug.BuildInfo{Main: debug.Module{Path: "github.com/mooringhq/mooring", Version: mainVersion}}
			for i := 0; i+1 < len(settings); i += 2 {
				bi.Settings = append(bi.Settings, debug.BuildSetting{Key: settings[i], Value: settings[i+1]})
			}
			return bi, true
		}
	}
	none := func() (*debug.BuildInfo, bool) { return nil, false }
	for name, tc := range map[string]struct {
		version, revision string
		read              func() (*debug.BuildInfo, bool)
		want              Info
		str               string
	}{
		"linker flags win": {"v0.3.0", rev, built("v0.2.0", "vcs.revision", "ffff"),
			Info{"v0.3.0", rev, runtime.Version()}, "v0.3.0 (0123456789ab, " + runtime.Version() + ")"},
		"go install @version": {"", "", built("v0.3.1"),
			Info{"v0.3.1", UnknownRevision, runtime.Version()}, "v0.3.1 (unknown, " + runtime.Version() + ")"},
		"git checkout, changed": {"", "", built("(devel)", "vcs.revision", rev, "vcs.modified", "true"),
			Info{DevVersion, rev + "-dirty", runtime.Version()}, "dev (0123456789ab-dirty, " + runtime.Version() + ")"},
		"nothing known": {"", "", none,
			Info{DevVersion, UnknownRevision, runtime.Version()}, "dev (unknown, " + runtime.Version() + ")"},
	} {
		t.Run(name, func(t *testing.T) {
			got := get(tc.version, tc.revision, tc.read)
			if got != tc.want {
				t.Errorf("get = %+v, want %+v", got, tc.want)
			}
			if s := got.String(); s != tc.str {
				t.Errorf("String = %q, want %q", s, tc.str)
			}
		})
	}
}

func TestPrint(t *testing.T) {
	var b strings.Builder
	Print(&b, "mooring")
	if got := b.String(); !strings.HasPrefix(got, "mooring ") || !strings.HasSuffix(got, ")\n") || !strings.Contains(got, runtime.Version()) {
		t.Errorf("Print = %q", got)
	}
}

// Whatever the version, the Lease's labels are valid: the API server would refuse the
// Lease otherwise, and the operator would never lead.
func TestLeaseLabels(t *testing.T) {
	for in, want := range map[string]string{
		"v0.3.0":                  "v0.3.0",
		"v0.3.0-4-gabc1234-dirty": "v0.3.0-4-gabc1234-dirty",
		"v1.0.0+build.5":          "v1.0.0_build.5",
		"(devel)":                 "devel",
		"+++":                     "",
		strings.Repeat("a", 70):   strings.Repeat("a", 63),
		"":                        "",
	} {
		if got := labelValue(in); got != want {
			t.Errorf("labelValue(%q) = %q, want %q", in, got, want)
		}
	}
	old := Version
	t.Cleanup(func() { Version = old })
	Version = "v2.0.0+weird/version"
	labels := LeaseLabels("mooring-controller-manager-5d9c7b8f4-x2x7q")
	for k, v := range labels {
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			t.Errorf("label %s=%q: %v", k, v, errs)
		}
	}
	if labels[LeaseVersionLabel] != "v2.0.0_weird_version" || labels[LeaseHostLabel] != "mooring-controller-manager-5d9c7b8f4-x2x7q" {
		t.Errorf("LeaseLabels = %v", labels)
	}
}
