package nodeimage

import (
	"strings"
	"testing"
)

func TestMmdebstrapFailure(t *testing.T) {
	d := Debian{Suite: "trixie", Packages: []string{"memcache"}}
	tests := map[string]struct {
		output    string
		wantCause string
		wantFix   string
	}{
		"unknown package": {
			output:    "I: running apt-get update...\nE: Unable to locate package memcache\nE: apt-get install failed\n",
			wantCause: "mmdebstrap: Unable to locate package memcache",
			wantFix:   "Debian trixie does not have the packages the catalogue names (memcache)",
		},
		"mirror unreachable": {
			output:    "Err:1 http://m.example/debian trixie InRelease\nE: Failed to fetch http://m.example/debian/dists/trixie/InRelease  Could not resolve 'm.example'\nE: apt-get update -oAPT::Status-Fd=<$fd> -oDpkg::Use-Pty=false failed\n",
			wantCause: "mmdebstrap: Failed to fetch http://m.example/debian/dists/trixie/InRelease Could not resolve 'm.example'",
			wantFix:   "check that the Debian mirror http://m.example/debian is reachable and serves trixie",
		},
		"unknown signing key": {
			output:    "E: The repository is not signed.\n",
			wantCause: "mmdebstrap: The repository is not signed.",
			wantFix:   "debian-archive-keyring",
		},
		"no error line": {
			output:    "I: something\nsegmentation fault\n",
			wantCause: "mmdebstrap: segmentation fault",
			wantFix:   "set Options.Log",
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			err := mmdebstrapFailure("docker.io/library/memcached:1.6", d, "http://m.example/debian", tt.output)
			if err.Cause != tt.wantCause || !strings.Contains(err.Fix, tt.wantFix) {
				t.Errorf("cause %q fix %q, want cause %q and a fix saying %q", err.Cause, err.Fix, tt.wantCause, tt.wantFix)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "nodeimage: building docker.io/library/memcached:1.6: ") || strings.Contains(msg, "\n") {
				t.Errorf("message %q, want one line naming the image", msg)
			}
		})
	}
}
