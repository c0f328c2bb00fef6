package clusterenv

import (
	"fmt"
	"strconv"
	"strings"
)

// PausedFleet is a manifest of n Apps named app-<i>, i zero-padded to the width of n-1,
// created with the mooring.dev/paused annotation so that the test decides when they
// converge (by removing it). Each has one nginx:1.27 replica, a config "n=<i>" (a
// ConfigMap), and, when port is not 0, that port (a Service).
func PausedFleet(n, port int) string {
	width := len(strconv.Itoa(max(n-1, 0)))
	ports := ""
	if port != 0 {
		ports = fmt.Sprintf("  port: %d\n", port)
	}
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "---\napiVersion: mooring.dev/v1\nkind: App\nmetadata:\n  name: app-%0*d\n  annotations:\n    mooring.dev/paused: \"true\"\nspec:\n  image: nginx:1.27\n  replicas: 1\n%s  config: \"n=%d\"\n", width, i, ports, i)
	}
	return b.String()
}
