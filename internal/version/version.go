// Package version is the one place Mooring's binaries (the operator, the portal,
// mooring-dev and the kubectl plugin) learn which build they are. The release sets it with
//
//	go build -ldflags "-X github.com/mooringhq/mooring/internal/version.Version=v0.3.0 \
//	                   -X github.com/mooringhq/mooring/internal/version.Revision=$(git rev-parse HEAD)"
//
// (`make build` does). Without them a binary still knows something: `go install
// ...@v0.3.0` records the module version, and a build in a Git checkout records the
// commit, which Get falls back to.
package version

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
)

// Version is the release, e.g. v0.3.0 or v0.3.0-4-gabc1234-dirty (git describe), set at
// build time; empty in a build that set nothing.
var Version = ""

// Revision is the full commit the binary was built from, set at build time; empty in a
// build that set nothing.
var Revision = ""

// Defaults for what neither the linker flags nor Go's build information say.
const (
	// DevVersion is the version of a build that was given none.
	DevVersion = "dev"
	// UnknownRevision is the revision of a build that was given none, outside Git.
	UnknownRevision = "unknown"
)

// Info is what a binary knows about its build.
type Info struct {
	// Version is the release: Version when set, else the module version `go install`
	// recorded, else DevVersion.
	Version string `json:"version"`
	// Revision is the full commit: Revision when set, else the commit Go recorded (with
	// "-dirty" when the work tree had changes), else UnknownRevision.
	Revision string `json:"revision"`
	// GoVersion is the Go release the binary was built with.
	GoVersion string `json:"goVersion"`
}

// Get returns the build's Info.
func Get() Info {
	return get(Version, Revision, readBuildInfo)
}

// readBuildInfo is debug.ReadBuildInfo; tests replace it.
var readBuildInfo = debug.ReadBuildInfo

func get(version, revision string, read func() (*debug.BuildInfo, bool)) Info {
	info := Info{Version: version, Revision: revision, GoVersion: runtime.Version()}
	bi, ok := read()
	if ok && info.Version == "" {
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			info.Version = v
		}
	}
	if ok && info.Revision == "" {
		dirty := false
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				info.Revision = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if info.Revision != "" && dirty {
			info.Revision += "-dirty"
		}
	}
	if info.Version == "" {
		info.Version = DevVersion
	}
	if info.Revision == "" {
		info.Revision = UnknownRevision
	}
	return info
}

// ShortRevision is the revision cut to 12 hex digits (as Go's pseudo-versions cut it),
// keeping a "-dirty" suffix.
func (i Info) ShortRevision() string {
	rev, dirty := strings.CutSuffix(i.Revision, "-dirty")
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "-dirty"
	}
	return rev
}

// String is "v0.3.0 (abc1234def56, go1.26.7)": what --version prints after the binary's
// name, and the start log lines carry field by field.
func (i Info) String() string {
	return fmt.Sprintf("%s (%s, %s)", i.Version, i.ShortRevision(), i.GoVersion)
}

// String is Get().String().
func String() string { return Get().String() }

// Print writes "<name> <String()>" and a newline to w: the answer to --version and to a
// version subcommand.
func Print(w io.Writer, name string) {
	fmt.Fprintf(w, "%s %s\n", name, String())
}
