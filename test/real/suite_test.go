package real

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/mooringhq/mooring/internal/localcluster"
	"github.com/mooringhq/mooring/internal/manager"
	"github.com/mooringhq/mooring/internal/nodeimage"
	"github.com/mooringhq/mooring/internal/testutil"
)

// requireEnv, when set (CI sets it), turns a machine that cannot run a real node into a
// failure instead of a skip, so the tier can never pass by not running.
const requireEnv = "MOORING_REQUIRE_REAL_NODE"

// realNodes is how many real nodes the tier's cluster has: two, so that where a pod runs
// matters (spread, drains, a node's loss; nodes_test.go).
const realNodes = 2

// imageTag is the tag the operator image is built and installed with.
const imageTag = "real-tier"

// suite is what every test of the package shares: one cluster with a real node and the
// chart installed on it.
var suite struct {
	root, binDir, stateDir string
	// images are the archives loaded into the node, for clusters started again;
	// pauseImage is the sandbox image's, the one a node cannot start without.
	images     []string
	pauseImage string
	cluster    *localcluster.Cluster
	cs         kubernetes.Interface
	c          client.Client
}

func TestMain(m *testing.M) {
	if state := os.Getenv(childStateEnv); state != "" {
		os.Exit(runChild(state))
	}
	flag.Parse() // for startPathsSelected
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctrllog.SetLogger(logr.Discard())
	root, err := filepath.Abs(testutil.RepoRoot())
	if err != nil {
		fmt.Fprintln(os.Stderr, "real:", err)
		return 1
	}
	suite.root, suite.binDir = root, filepath.Join(root, "bin", "k8s")
	if why, fatal := testutil.Unavailable(testutil.E2E, localcluster.MissingBinaries(suite.binDir)); why != "" {
		fmt.Fprintf(os.Stderr, "real: skipped: %s\n", why)
		if fatal || (os.Getenv(requireEnv) != "" && testutil.Selected(testutil.E2E)) {
			return 1
		}
		return 0
	}
	if err := localcluster.RealNodeSupport(suite.binDir); err != nil {
		if os.Getenv(requireEnv) != "" {
			fmt.Fprintf(os.Stderr, "real: this machine cannot run a real node (%s is set): %v\n", requireEnv, err)
			return 1
		}
		fmt.Fprintf(os.Stderr, "real: skipped, this machine cannot run a real node: %v\n", err)
		return 0
	}
	if suite.stateDir, err = os.MkdirTemp("", "mooring-real-"); err != nil {
		fmt.Fprintln(os.Stderr, "real:", err)
		return 1
	}
	start := time.Now()
	code := 1
	if err := setUp(); err != nil {
		fmt.Fprintf(os.Stderr, "real: set-up: %v\n", err)
	} else {
		fmt.Fprintf(os.Stderr, "real: cluster with a real node and the chart ready in %s\n", time.Since(start).Round(100*time.Millisecond))
		code = m.Run()
		if code == 0 {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			n, err := checkNoPasswordLeaks(ctx)
			cancel()
			if err != nil {
				fmt.Fprintf(os.Stderr, "real: %v\n", err)
				code = 1
			} else {
				fmt.Fprintf(os.Stderr, "real: none of %d passwords in any pod's log, event, Job spec, Mooring object or process argument\n", n)
			}
		}
	}
	if suite.cluster != nil {
		if err := suite.cluster.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "real: stop: %v\n", err)
			code = 1
		}
	}
	// Nothing of the node may outlive the cluster: no process, mount, interface, rule,
	// route or containerd state.
	if left := localcluster.Leftovers(context.Background()); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "real: the stopped cluster left behind: %s\n", strings.Join(left, "; "))
		code = 1
	}
	// And nothing at all once its state is cleaned as `make dev-clean` does (the
	// volumes of the databases the tests kept included); logs are kept on failure.
	if code == 0 {
		clusterDir := filepath.Join(suite.stateDir, "cluster")
		err := localcluster.Clean(context.Background(), clusterDir, suite.binDir)
		if left := localcluster.Leftovers(context.Background(), clusterDir); err != nil || len(left) > 0 {
			fmt.Fprintf(os.Stderr, "real: the cleaned cluster left behind: %s (%v)\n", strings.Join(left, "; "), err)
			code = 1
		}
	}
	if code != 0 {
		fmt.Fprintf(os.Stderr, "real: failed; logs kept in %s\n", suite.stateDir)
	} else {
		_ = os.RemoveAll(suite.stateDir)
	}
	return code
}

// setUp builds the images (the operator's as `make image` does, the stand-ins from
// Debian's packages, both cached), starts the cluster with its real node and installs
// the chart on it.
func setUp() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	operatorImage, err := buildOperatorImage(ctx)
	if err != nil {
		return err
	}
	specs := nodeimage.Startup()
	// The database servers the database tests run (and their clients).
	for _, ref := range []string{"docker.io/library/postgres:18", "docker.io/library/mariadb:11.8"} {
		s, ok := nodeimage.Find(ref)
		if !ok {
			return fmt.Errorf("no local stand-in for %s in internal/nodeimage", ref)
		}
		specs = append(specs, s)
	}
	archives, err := nodeimage.EnsureAll(ctx, specs, nodeimage.Options{Log: os.Stderr})
	if err != nil {
		return err
	}
	suite.images = append(archives, operatorImage)
	for i, s := range specs {
		if s.Ref == nodeimage.PauseRef {
			suite.pauseImage = archives[i]
		}
	}
	state := filepath.Join(suite.stateDir, "cluster")
	if selected("TestReadyWithOneAndTwoNodes", false) {
		compareReadyTimes(ctx)
	}
	if startPathsSelected() {
		runStartPaths(ctx, state)
	}
	t0 := time.Now()
	if err := startSuiteCluster(ctx, suiteImages); err != nil {
		return err
	}
	if startPaths.ran {
		startPaths.steps = append(startPaths.steps, fmt.Sprintf("the suite's cluster started after the reboot in %s", time.Since(t0).Round(100*time.Millisecond)))
	}
	return installChart(ctx)
}

// suiteImages is Options.NodeImages of the suite's cluster: the archives setUp made.
func suiteImages(context.Context) ([]string, error) { return suite.images, nil }

// startSuiteCluster starts (or starts again) the suite's cluster on its state directory
// and makes the suite's clients for it.
func startSuiteCluster(ctx context.Context, images func(context.Context) ([]string, error)) error {
	var err error
	suite.cluster, err = localcluster.Start(ctx, localcluster.Options{
		BinDir: suite.binDir, StateDir: filepath.Join(suite.stateDir, "cluster"), Out: os.Stderr,
		RealNode: localcluster.RealNodeOn, RealNodes: realNodes, NodeImages: images,
	})
	if err != nil {
		return err
	}
	if suite.cs, err = kubernetes.NewForConfig(suite.cluster.Config); err != nil {
		return err
	}
	suite.c, err = client.New(suite.cluster.Config, client.Options{Scheme: manager.Scheme})
	return err
}

// buildOperatorImage runs `make image`'s builder for the operator alone and returns its
// docker-load tarball.
func buildOperatorImage(ctx context.Context) (string, error) {
	out := filepath.Join(suite.stateDir, "image")
	cmd := exec.CommandContext(ctx, "go", "run", "./hack/image", "--package", "./cmd/mooring", "--name", "mooring",
		"--tag", imageTag, "--out", out)
	cmd.Dir, cmd.Stdout, cmd.Stderr = suite.root, os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("build the operator image: %w", err)
	}
	return filepath.Join(out, "mooring.tar"), nil
}

// kubectl runs bin/k8s/kubectl as the cluster admin, as a user would, and returns its
// combined output and error.
func kubectl(ctx context.Context, args ...string) (string, error) {
	out, err := kubectlCmd(ctx, args...).CombinedOutput()
	return string(out), err
}

func kubectlCmd(ctx context.Context, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, filepath.Join(suite.binDir, "kubectl"),
		append([]string{"--kubeconfig", suite.cluster.KubeconfigPath}, args...)...)
}

// mustKubectl is kubectl that fails the test on an error.
func mustKubectl(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := kubectl(ctx, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}
