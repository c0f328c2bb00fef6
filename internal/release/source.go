package release

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// Source is what a build is of: a version, a commit and that commit's time.
type Source struct {
	// Version is linked into the binaries and tags the images (git describe by default).
	Version string
	// Revision is the commit (git rev-parse HEAD).
	Revision string
	// Created stamps the images' files and configs and the SBOMs: the commit time, so a
	// commit always gives the same bytes.
	Created time.Time
}

// ReadSource reads the commit, its time and a version (`git describe --tags --always
// --dirty`) from git in the current directory; without git they are "unknown", "dev" and
// the Unix epoch. SOURCE_DATE_EPOCH, when set, overrides the time (the reproducible-builds
// convention).
func ReadSource() (Source, error) {
	s := Source{Revision: "unknown", Version: "dev", Created: time.Unix(0, 0).UTC()}
	if out, err := git("rev-parse", "HEAD"); err == nil {
		s.Revision = out
	}
	if out, err := git("describe", "--tags", "--always", "--dirty"); err == nil {
		s.Version = out
	}
	if out, err := git("log", "-1", "--format=%ct"); err == nil {
		sec, err := strconv.ParseInt(out, 10, 64)
		if err != nil {
			return s, fmt.Errorf("commit time %q: %w", out, err)
		}
		s.Created = time.Unix(sec, 0).UTC()
	}
	if env := os.Getenv("SOURCE_DATE_EPOCH"); env != "" {
		sec, err := strconv.ParseInt(env, 10, 64)
		if err != nil {
			return s, fmt.Errorf("SOURCE_DATE_EPOCH %q: %w", env, err)
		}
		s.Created = time.Unix(sec, 0).UTC()
	}
	return s, nil
}

func git(args ...string) (string, error) {
	var out bytes.Buffer
	cmd := exec.Command("git", args...)
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		return "", err
	}
	return strings.TrimSpace(out.String()), nil
}
