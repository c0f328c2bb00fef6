package install

import (
	"testing"

	"github.com/mooringhq/mooring/internal/testutil/clusterenv"
)

// suite is the package's cluster: nothing installed, operator built but not started.
var suite *clusterenv.Env

func TestMain(m *testing.M) {
	clusterenv.Main(m, &suite, clusterenv.Options{
		Name: "install",
		Bare: true,
		// Webhook calls go to the endpoints of the chart's Service (see the package doc).
		APIServerArgs: []string{"--enable-aggregator-routing=true"},
	})
}
