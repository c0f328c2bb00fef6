package real

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mooringhq/mooring/internal/localcluster"
)

// addedByASecondNode is how much longer a cluster with two real nodes may take to be
// ready than one with one node (issue 38): the nodes start side by side.
const addedByASecondNode = 5 * time.Second

// readyTimes is what compareReadyTimes measured, by number of real nodes.
var readyTimes struct {
	ran  bool
	err  error
	took map[int][]time.Duration
}

// TestReadyWithOneAndTwoNodes: a cluster with two real nodes is ready (both nodes Ready,
// DNS answering) at most addedByASecondNode later than one with one, tools and images
// cached. compareReadyTimes starts them, alternately, on new state directories before the
// suite's cluster starts (one machine has one set of real nodes). It runs only when named:
//
//	go test ./test/real -run TestReadyWithOneAndTwoNodes -v
func TestReadyWithOneAndTwoNodes(t *testing.T) {
	if !readyTimes.ran {
		t.Skip("runs only when named: go test ./test/real -run TestReadyWithOneAndTwoNodes -v")
	}
	if readyTimes.err != nil {
		t.Fatal(readyTimes.err)
	}
	one, two := slices.Min(readyTimes.took[1]), slices.Min(readyTimes.took[2])
	t.Logf("cluster ready with 1 real node: %v (best %v); with 2: %v (best %v)",
		readyTimes.took[1], one, readyTimes.took[2], two)
	if two-one > addedByASecondNode {
		t.Fatalf("two real nodes ready %v after one (best of each); want at most %v more", two-one, addedByASecondNode)
	}
}

// compareReadyTimes starts and stops clusters of 1, 2, 1 and 2 real nodes, each on a new
// state directory, and records how long each start took.
func compareReadyTimes(ctx context.Context) {
	readyTimes.ran = true
	readyTimes.took = map[int][]time.Duration{}
	readyTimes.err = func() error {
		for i, n := range []int{1, 2, 1, 2} {
			state := filepath.Join(suite.stateDir, fmt.Sprintf("compare-%d", i))
			t0 := time.Now()
			c, err := localcluster.Start(ctx, localcluster.Options{BinDir: suite.binDir, StateDir: state, Out: io.Discard,
				RealNode: localcluster.RealNodeOn, RealNodes: n, NodeImages: suiteImages})
			if err != nil {
				return fmt.Errorf("start with %d real nodes: %w", n, err)
			}
			took := time.Since(t0).Round(100 * time.Millisecond)
			readyTimes.took[n] = append(readyTimes.took[n], took)
			fmt.Fprintf(os.Stderr, "real: a cluster with %d real nodes ready in %s\n", n, took)
			if err := c.Stop(); err != nil {
				return err
			}
			if left := localcluster.Leftovers(ctx); len(left) > 0 {
				return fmt.Errorf("the cluster of %d real nodes left behind: %s", n, strings.Join(left, "; "))
			}
			if err := localcluster.Clean(ctx, state, suite.binDir); err != nil {
				return err
			}
		}
		return nil
	}()
}
