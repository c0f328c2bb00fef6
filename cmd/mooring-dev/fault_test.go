package main

import (
	"context"
	"strings"
	"testing"

	"github.com/mooringhq/mooring/internal/localcluster"
)

// TestFaultOnAnUnknownNodeIsRefused: a node fault naming a node no local cluster's real
// node can have is refused with the names they have, before anything is asked of a
// running cluster (here none runs, so reaching it would fail with another message).
func TestFaultOnAnUnknownNodeIsRefused(t *testing.T) {
	cfg := config{state: t.TempDir()}
	for _, verb := range []string{"node-stop", "node-start"} {
		for _, bad := range []string{"no-such-node", "mooring-real-1", "mooring-real-5", "mooring-node-0"} {
			err := faultCommand(context.Background(), cfg, []string{verb, bad}, &strings.Builder{})
			if err == nil || !strings.Contains(err.Error(), `no real node "`+bad+`"`) || !strings.Contains(err.Error(), "mooring-real, mooring-real-2") {
				t.Errorf("%s %s: want refused naming the real nodes' names, got %v", verb, bad, err)
			}
		}
		// A real node's name, or none (the first node), is accepted: what follows is
		// asking the run, and none runs here.
		for _, args := range [][]string{{verb}, {verb, localcluster.RealNodeName}, {verb, "mooring-real-2"}} {
			err := faultCommand(context.Background(), cfg, args, &strings.Builder{})
			if err == nil || !strings.Contains(err.Error(), "nothing running") {
				t.Errorf("%v: want it to ask the run (nothing running), got %v", args, err)
			}
		}
	}
}

// TestRealNodesFlag: --real-nodes 0 means none whatever --real-node says, more than
// the machine runs is refused with the reason, and the count goes to the cluster.
func TestRealNodesFlag(t *testing.T) {
	for name, tc := range map[string]struct {
		mode     string
		n        int
		want     localcluster.RealNode
		wantN    int
		wantFail string
	}{
		"default":      {mode: "auto", n: 1, want: localcluster.RealNodeAuto, wantN: 1},
		"two":          {mode: "on", n: 2, want: localcluster.RealNodeOn, wantN: 2},
		"the most":     {mode: "auto", n: localcluster.MaxRealNodes, want: localcluster.RealNodeAuto, wantN: localcluster.MaxRealNodes},
		"none":         {mode: "on", n: 0, want: localcluster.RealNodeOff, wantN: 0},
		"too many":     {mode: "auto", n: localcluster.MaxRealNodes + 1, wantFail: "--real-nodes is 5; want 0 (none) to 4: each real node is a containerd and a kubelet"},
		"negative":     {mode: "auto", n: -1, wantFail: "--real-nodes is -1"},
		"unknown mode": {mode: "sometimes", n: 1, wantFail: `--real-node is "sometimes"`},
	} {
		t.Run(name, func(t *testing.T) {
			mode, n, err := realNodeMode(tc.mode, tc.n)
			if tc.wantFail != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantFail) {
					t.Fatalf("realNodeMode(%q, %d) = %v; want an error containing %q", tc.mode, tc.n, err, tc.wantFail)
				}
				return
			}
			if err != nil || mode != tc.want || n != tc.wantN {
				t.Fatalf("realNodeMode(%q, %d) = %q, %d, %v; want %q, %d", tc.mode, tc.n, mode, n, err, tc.want, tc.wantN)
			}
		})
	}
}
