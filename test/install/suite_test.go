package install

import (
	"fmt"
	"os"
	"testing"

	"github.com/mooringhq/mooring/internal/testutil/clusterenv"
)

// suite is the package's cluster: nothing installed, operator built but not started.
var suite *clusterenv.Env

func TestMain(m *testing.M) {
	// Checked before a cluster is started, so that a host that cannot run the package
	// fails it at once, rather than halfway through a test.
	if _, err := findHostIP(); err != nil {
		fmt.Fprintf(os.Stderr, "install: %v\n", err)
		os.Exit(1)
	}
	clusterenv.Main(m, &suite, clusterenv.Options{
		Name: "install",
		Bare: true,
		// Webhook calls go to the endpoints of the chart's Service (see the package doc).
		APIServerArgs: []string{"--enable-aggregator-routing=true"},
	})
}
