package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mooringhq/mooring/internal/devenv"
	"github.com/mooringhq/mooring/internal/localcluster"
	"github.com/mooringhq/mooring/internal/manager"
	"github.com/mooringhq/mooring/internal/testutil"
)

// suite is the cluster and operator every test of the package shares.
var suite struct {
	root, binDir, stateDir, operatorBin string
	operatorKubeconfig                  string
	webhookPort                         int
	cluster                             *localcluster.Cluster
	operator                            *localcluster.Operator
	cfg                                 *rest.Config
	client                              client.Client
}

func TestMain(m *testing.M) {
	code, err := run(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		fmt.Fprintf(os.Stderr, "e2e: logs kept in %s (cluster/logs/, mooring.log)\n", suite.stateDir)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

func run(m *testing.M) (int, error) {
	root, err := filepath.Abs(testutil.RepoRoot())
	if err != nil {
		return 1, err
	}
	suite.root = root
	suite.binDir = filepath.Join(root, "bin", "k8s")
	if missing := localcluster.MissingBinaries(suite.binDir); len(missing) > 0 {
		return 1, fmt.Errorf("%v missing in %s: run `make tools`", missing, suite.binDir)
	}
	tmp, err := os.MkdirTemp("", "mooring-e2e-")
	if err != nil {
		return 1, err
	}
	suite.stateDir = tmp
	keep := true // until the suite passes: the logs are what explains a failure
	defer func() {
		if !keep {
			os.RemoveAll(tmp)
		}
	}()

	// Build the operator from this checkout, so the suite never runs a stale binary.
	suite.operatorBin = filepath.Join(tmp, "mooring")
	build := exec.Command("go", "build", "-o", suite.operatorBin, "./cmd/mooring")
	build.Dir, build.Stdout, build.Stderr = root, os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return 1, fmt.Errorf("build operator: %w", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	suite.cluster, err = localcluster.Start(ctx, localcluster.Options{
		BinDir: suite.binDir, StateDir: filepath.Join(tmp, "cluster"), Out: os.Stderr,
	})
	if err != nil {
		return 1, err
	}
	defer suite.cluster.Stop()
	suite.cfg = suite.cluster.Config
	if suite.client, err = client.New(suite.cfg, client.Options{Scheme: manager.Scheme}); err != nil {
		return 1, err
	}
	if suite.webhookPort, err = localcluster.FreePort(); err != nil {
		return 1, err
	}
	if err := devenv.Install(ctx, suite.cfg, root, suite.webhookPort); err != nil {
		return 1, err
	}
	// The operator runs with the generated ClusterRole only, as in production: a missing
	// RBAC rule fails the suite.
	if suite.operatorKubeconfig, err = devenv.OperatorKubeconfig(ctx, suite.cfg, root, tmp); err != nil {
		return 1, err
	}
	if err := startOperator(ctx); err != nil {
		return 1, err
	}
	defer func() { stopOperator() }()
	if err := testutil.Poll(time.Minute, func() error { return devenv.WebhooksReady(ctx, suite.cfg) }); err != nil {
		return 1, fmt.Errorf("webhooks not ready: %w", err)
	}
	fmt.Fprintf(os.Stderr, "e2e: cluster and operator ready in %s\n", time.Since(start).Round(100*time.Millisecond))

	code := m.Run()
	// A rule missing from the generated ClusterRole shows up as a forbidden request in the
	// operator's log, even when a retry hid it from the tests.
	if code == 0 {
		if log, err := os.ReadFile(filepath.Join(tmp, "mooring.log")); err != nil {
			return 1, err
		} else if i := bytes.Index(log, []byte("is forbidden")); i >= 0 {
			start := max(0, bytes.LastIndexByte(log[:i], '\n'))
			return 1, fmt.Errorf("the operator was denied a request by RBAC: %s", log[start:min(len(log), i+300)])
		}
	}
	if code != 0 {
		fmt.Fprintf(os.Stderr, "e2e: failed; logs kept in %s (cluster/logs/, mooring.log)\n", tmp)
	}
	keep = code != 0
	return code, nil
}

// startOperator runs the operator binary against the suite's cluster, serving its webhooks
// on localhost and appending to <state>/mooring.log.
func startOperator(ctx context.Context, extraArgs ...string) error {
	args := append(devenv.OperatorArgs(suite.stateDir, suite.webhookPort), "--leader-elect=false")
	args = append(args, extraArgs...)
	op, err := localcluster.StartOperator(ctx, localcluster.OperatorOptions{
		Binary:     suite.operatorBin,
		Kubeconfig: suite.operatorKubeconfig,
		LogPath:    filepath.Join(suite.stateDir, "mooring.log"),
		Args:       args,
	})
	if err != nil {
		return err
	}
	suite.operator = op
	return nil
}

func stopOperator() error {
	if suite.operator == nil {
		return nil
	}
	err := suite.operator.Stop()
	suite.operator = nil
	return err
}
