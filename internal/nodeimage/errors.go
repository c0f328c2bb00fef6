package nodeimage

import (
	"fmt"
	"strings"
)

// BuildError is a build that failed: which image, why, and what to do about it, on one
// line.
type BuildError struct {
	// Ref names the image.
	Ref string
	// Cause is what went wrong, e.g. "mmdebstrap not found".
	Cause string
	// Fix is what to do about it, when known.
	Fix string
}

// Error is "nodeimage: building <ref>: <cause>; <fix>".
func (e *BuildError) Error() string {
	msg := fmt.Sprintf("nodeimage: building %s: %s", e.Ref, oneLine(e.Cause))
	if e.Fix != "" {
		msg += "; " + oneLine(e.Fix)
	}
	return msg
}

// mmdebstrapFixes are what to do about mmdebstrap's failures, looked for in order in
// its last error line.
var mmdebstrapFixes = []struct {
	symptoms []string
	fix      func(d Debian, mirror string) string
}{
	{
		[]string{"Unable to locate package", "has no installation candidate", "Unable to satisfy dependencies", "unmet dependencies"},
		func(d Debian, _ string) string {
			return fmt.Sprintf("Debian %s does not have the packages the catalogue names (%s); correct the image's Spec", d.Suite, strings.Join(d.Packages, ", "))
		},
	},
	{
		[]string{"NO_PUBKEY", "is not signed", "signatures couldn't be verified", "EXPKEYSIG"},
		func(d Debian, _ string) string {
			return fmt.Sprintf("the keyring does not know Debian %s's signing key; update Debian's debian-archive-keyring package", d.Suite)
		},
	},
	{
		[]string{"Failed to fetch", "Could not resolve", "Temporary failure resolving", "Could not connect", "apt-get update", "does not have a Release file"},
		func(d Debian, mirror string) string {
			return fmt.Sprintf("check that the Debian mirror %s is reachable and serves %s (the mirror comes from /etc/apt/sources.list.d or Options.Mirror)", mirror, d.Suite)
		},
	},
	{
		[]string{"unshare", "fakechroot", "Operation not permitted", "Permission denied"},
		func(Debian, string) string {
			return "run as root: mmdebstrap needs root to make device nodes and run maintainer scripts"
		},
	},
	{
		[]string{"No space left on device"},
		func(Debian, string) string { return "free disk space in the image cache and in $TMPDIR" },
	},
}

// mmdebstrapFailure explains mmdebstrap's failure from its output: the first error it
// reported is the cause (the later ones tend to be its consequences, "apt-get update
// failed"), and every error it reported is searched for a known symptom.
func mmdebstrapFailure(ref string, d Debian, mirror string, output string) *BuildError {
	errs := errorLines(output)
	cause := "mmdebstrap: " + oneLine(errs[0])
	all := strings.Join(errs, "\n")
	for _, f := range mmdebstrapFixes {
		for _, s := range f.symptoms {
			if strings.Contains(all, s) {
				return &BuildError{Ref: ref, Cause: cause, Fix: f.fix(d, mirror)}
			}
		}
	}
	return &BuildError{Ref: ref, Cause: cause, Fix: "set Options.Log to see mmdebstrap's whole output"}
}

// errorLines are the lines of a tool's output that say "E:" (apt's and mmdebstrap's
// prefix for errors), without it; else its last non-empty line.
func errorLines(output string) []string {
	var errs []string
	lines := strings.Split(strings.TrimSpace(output), "\n")
	for _, line := range lines {
		if line = strings.TrimSpace(line); strings.HasPrefix(line, "E:") {
			errs = append(errs, strings.TrimSpace(strings.TrimPrefix(line, "E:")))
		}
	}
	if len(errs) > 0 {
		return errs
	}
	if last := strings.TrimSpace(lines[len(lines)-1]); last != "" {
		return []string{last}
	}
	return []string{"no output"}
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
