package main

import (
	"context"
	"strings"
	"testing"

	"github.com/mooringhq/mooring/internal/localcluster"
)

// TestFaultOnAnUnknownNodeIsRefused: a node fault naming a node other than the real one
// is refused with the name of the real one, before anything is asked of a running
// cluster (here none runs, so reaching it would fail with another message).
func TestFaultOnAnUnknownNodeIsRefused(t *testing.T) {
	cfg := config{state: t.TempDir()}
	for _, verb := range []string{"node-stop", "node-start"} {
		err := faultCommand(context.Background(), cfg, []string{verb, "no-such-node"}, &strings.Builder{})
		if err == nil || !strings.Contains(err.Error(), `no real node "no-such-node"`) || !strings.Contains(err.Error(), localcluster.RealNodeName) {
			t.Errorf("%s no-such-node: want refused naming %s, got %v", verb, localcluster.RealNodeName, err)
		}
		// The real node's own name is accepted: what follows is asking the run, and
		// none runs here.
		err = faultCommand(context.Background(), cfg, []string{verb, localcluster.RealNodeName}, &strings.Builder{})
		if err == nil || !strings.Contains(err.Error(), "nothing running") {
			t.Errorf("%s %s: want it to ask the run (nothing running), got %v", verb, localcluster.RealNodeName, err)
		}
	}
}
