package release

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// VersionPackage holds the binaries' Version and Revision, set at link time.
const VersionPackage = "github.com/mooringhq/mooring/internal/version"

// BuildFlags are the `go build` flags of a release binary besides -ldflags: no file system
// paths and no VCS stamp in the binary, so one commit gives one binary on any machine.
var BuildFlags = []string{"-trimpath", "-buildvcs=false"}

// LDFlags are the linker flags of a release binary: stripped, no build id, and the
// version and commit in internal/version.
func LDFlags(src Source) string {
	return fmt.Sprintf("-s -w -buildid= -X %s.Version=%s -X %s.Revision=%s", VersionPackage, src.Version, VersionPackage, src.Revision)
}

// Compile builds the Go main package pkg statically (CGO_ENABLED=0) for plat with
// BuildFlags and LDFlags(src), and returns the executable.
func Compile(pkg string, plat v1.Platform, src Source) ([]byte, error) {
	for _, v := range []string{src.Version, src.Revision} {
		if v == "" || strings.ContainsAny(v, " \t\n'\"\\") {
			return nil, fmt.Errorf("version or revision %q: want one word without quotes", v)
		}
	}
	tmp, err := os.MkdirTemp("", "mooring-release-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	bin := filepath.Join(tmp, "bin")
	args := append([]string{"build"}, BuildFlags...)
	args = append(args, "-ldflags="+LDFlags(src), "-o", bin, pkg)
	cmd := exec.Command("go", args...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+plat.OS, "GOARCH="+plat.Architecture, "GOFLAGS=")
	if plat.Architecture == "arm" && plat.Variant != "" {
		cmd.Env = append(cmd.Env, "GOARM="+strings.TrimPrefix(plat.Variant, "v"))
	}
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go build %s for %s: %w", pkg, plat, err)
	}
	return os.ReadFile(bin)
}
