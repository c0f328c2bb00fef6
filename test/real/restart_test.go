package real

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/mooringhq/mooring/internal/localcluster"
)

// The test binary run as a child that owns a cluster, as mooring-dev does: the state
// directory, the binaries and the image archives.
const (
	childStateEnv  = "MOORING_REAL_CHILD_STATE"
	childBinEnv    = "MOORING_REAL_CHILD_BIN"
	childImagesEnv = "MOORING_REAL_CHILD_IMAGES"
)

// childTimeout bounds a child's start and its stop; a warm start takes about 10 s.
const childTimeout = 3 * time.Minute

// startPaths is what runStartPaths found, for TestStartsOverKeptState to report.
var startPaths struct {
	ran   bool
	err   error
	steps []string
	// kept is written by the first run and read after the last start.
	kept *corev1.ConfigMap
}

// TestStartsOverKeptState: every way a local cluster with a real node ends leaves a state
// directory the next start runs on (issue 38; before, the second start failed on the
// kube-dns Service's ClusterIP). runStartPaths runs them on the suite's state directory
// before the suite's cluster starts, since one machine has one real node: a cluster in a
// process of its own (as mooring-dev) is started, then
//
//   - stopped by SIGTERM, as `make dev-down` stops a run, and started again;
//   - stopped by SIGINT (Ctrl-C of `make run`), which must leave nothing on the machine,
//     and started again;
//   - killed (SIGKILL: its components die with it; the containers, the node's mounts and
//     network stay), and started again;
//   - killed and "rebooted" (localcluster.Reboot: processes, mounts, network, cgroups and
//     /run gone, the state directory kept); the suite's own cluster is the start after it.
//
// Each start must bring the real node up Ready with DNS answering (Start checks both),
// and the object written in the first run must be there after the last start.
func TestStartsOverKeptState(t *testing.T) {
	if !startPaths.ran {
		t.Fatal("the start paths did not run before the suite's cluster started")
	}
	for _, s := range startPaths.steps {
		t.Log(s)
	}
	if startPaths.err != nil {
		t.Fatal(startPaths.err)
	}
	cm, err := suite.cs.CoreV1().ConfigMaps(startPaths.kept.Namespace).Get(context.Background(), startPaths.kept.Name, metav1.GetOptions{})
	if err != nil || cm.Data["written"] != startPaths.kept.Data["written"] {
		t.Fatalf("ConfigMap %s after the last start: %v %v, want it kept with %v", startPaths.kept.Name, err, cm, startPaths.kept.Data)
	}
}

// startPathsSelected reports whether -test.run selects TestStartsOverKeptState (after
// flag.Parse), so that running other tests alone does not pay for its starts.
func startPathsSelected() bool { return selected("TestStartsOverKeptState", true) }

// selected reports whether -test.run selects the named test; without -run, whether
// the test runs by default.
func selected(name string, byDefault bool) bool {
	f := flag.Lookup("test.run")
	if f == nil || f.Value.String() == "" {
		return byDefault
	}
	top := strings.Split(f.Value.String(), "/")[0]
	ok, err := regexp.MatchString(top, name)
	return err == nil && ok
}

// runStartPaths runs the start paths (see TestStartsOverKeptState) on state and leaves it
// as a reboot would, for the suite's cluster to start on.
func runStartPaths(ctx context.Context, state string) {
	startPaths.ran = true
	t0 := time.Now()
	step := func(format string, args ...any) {
		startPaths.steps = append(startPaths.steps, fmt.Sprintf(format, args...))
	}
	err := func() error {
		first, err := startChild(state, "nothing (a new state directory)")
		if err != nil {
			return err
		}
		step("started on a new state directory in %s", first.took)
		startPaths.kept = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kept-across-starts", Namespace: "default"},
			Data: map[string]string{"written": time.Now().Format(time.RFC3339Nano)}}
		cs, err := stateClient(state)
		if err != nil {
			return err
		}
		if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, startPaths.kept, metav1.CreateOptions{}); err != nil {
			return err
		}
		previous := first
		for _, end := range []struct {
			sig  syscall.Signal
			what string
		}{{syscall.SIGTERM, "SIGTERM (make dev-down)"}, {syscall.SIGINT, "SIGINT (Ctrl-C)"}, {syscall.SIGKILL, "SIGKILL"}} {
			took, err := previous.end(end.sig)
			if err != nil {
				return fmt.Errorf("%s: %w", end.what, err)
			}
			if end.sig != syscall.SIGKILL {
				if left := localcluster.Leftovers(ctx); len(left) > 0 {
					return fmt.Errorf("the cluster stopped by %s left behind: %s", end.what, strings.Join(left, "; "))
				}
				step("stopped by %s in %s, nothing left", end.what, took)
			}
			if previous, err = startChild(state, end.what); err != nil {
				return err
			}
			step("started after %s in %s", end.what, previous.took)
			if err := checkKept(ctx, state); err != nil {
				return err
			}
		}
		if _, err := previous.end(syscall.SIGKILL); err != nil {
			return err
		}
		return nil
	}()
	// Whatever happened, the suite's cluster starts after a reboot.
	if rerr := localcluster.Reboot(ctx, state, suite.binDir); rerr != nil {
		err = errors.Join(err, fmt.Errorf("reboot: %w", rerr))
	}
	if _, serr := os.Stat(filepath.Join(state, "etcd")); serr != nil {
		err = errors.Join(err, fmt.Errorf("the reboot must keep the state directory: %w", serr))
	}
	startPaths.err = err
	step("four starts and their ends in %s; the suite's cluster starts after the reboot", time.Since(t0).Round(100*time.Millisecond))
}

func stateClient(state string) (kubernetes.Interface, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(state, "kubeconfig"))
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}

// checkKept checks, through the kubeconfig the last start wrote, that the object written
// in the first run is still there.
func checkKept(ctx context.Context, state string) error {
	cs, err := stateClient(state)
	if err != nil {
		return err
	}
	cm, err := cs.CoreV1().ConfigMaps(startPaths.kept.Namespace).Get(ctx, startPaths.kept.Name, metav1.GetOptions{})
	if err != nil || cm.Data["written"] != startPaths.kept.Data["written"] {
		return fmt.Errorf("ConfigMap %s after the start: %w %v, want it kept with %v", startPaths.kept.Name, err, cm, startPaths.kept.Data)
	}
	return nil
}

// child is the test binary running a cluster in a process of its own (runChild).
type child struct {
	cmd  *exec.Cmd
	done chan error
	took time.Duration // its start
}

// startChild starts a cluster on state in a child process and waits until it is ready;
// after says what ended the run before, for the messages.
func startChild(state, after string) (*child, error) {
	t0 := time.Now()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	// The sandbox image only: the children end as soon as they are up, and importing
	// every image again would double their starts.
	cmd.Env = append(os.Environ(), childStateEnv+"="+state, childBinEnv+"="+suite.binDir, childImagesEnv+"="+suite.pauseImage)
	logPath := filepath.Join(suite.stateDir, fmt.Sprintf("child-%d.log", time.Now().UnixNano()))
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer func() { _ = log.Close() }()
	cmd.Stderr = log
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &child{cmd: cmd, done: make(chan error, 1)}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if sc.Text() == "ready" {
				close(ready)
			}
		}
		c.done <- cmd.Wait()
	}()
	select {
	case <-ready:
	case err := <-c.done:
		tail, _ := os.ReadFile(logPath)
		return nil, fmt.Errorf("start after %s failed (%w):\n%s", after, err, lastLines(string(tail), 15))
	case <-time.After(childTimeout):
		_ = cmd.Process.Kill()
		return nil, fmt.Errorf("start after %s not ready within %s; log %s", after, childTimeout, logPath)
	}
	c.took = time.Since(t0).Round(100 * time.Millisecond)
	return c, nil
}

// end sends sig to the child and waits for it to exit; any other signal than SIGKILL
// must end in a clean exit. It returns how long the exit took.
func (c *child) end(sig syscall.Signal) (time.Duration, error) {
	t0 := time.Now()
	if err := c.cmd.Process.Signal(sig); err != nil {
		return 0, err
	}
	select {
	case err := <-c.done:
		if sig != syscall.SIGKILL && err != nil {
			return 0, fmt.Errorf("the cluster's process after %v: %w", sig, err)
		}
	case <-time.After(childTimeout):
		_ = c.cmd.Process.Kill()
		return 0, fmt.Errorf("the cluster's process did not exit within %s of %v", childTimeout, sig)
	}
	return time.Since(t0).Round(100 * time.Millisecond), nil
}

// runChild runs a cluster with a real node on state as mooring-dev runs one: it says
// "ready" on stdout once started, and stops it on SIGINT or SIGTERM.
func runChild(state string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	images := filepath.SplitList(os.Getenv(childImagesEnv))
	c, err := localcluster.Start(ctx, localcluster.Options{
		BinDir: os.Getenv(childBinEnv), StateDir: state, Out: os.Stderr, RealNode: localcluster.RealNodeOn, RealNodes: realNodes,
		NodeImages: func(context.Context) ([]string, error) { return images, nil },
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	fmt.Println("ready")
	<-ctx.Done()
	if err := c.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "child: stop:", err)
		return 1
	}
	return 0
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
