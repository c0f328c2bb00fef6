// Package clusterenv starts what an end-to-end test package needs: a local cluster
// (etcd, kube-apiserver, controller-manager, scheduler, kwok), Mooring's CRDs and
// localhost webhooks, and the operator binary built from the checkout, running as a
// ServiceAccount bound to the generated ClusterRole. Each test package that breaks things
// on purpose (faults, a stopped operator) gets its own Env from Main, so it never
// disturbs another; the packages that do not (Options.Shared) attach to one cluster that
// hack/e2ecluster runs for the whole `make test` (see shared.go).
package clusterenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mooringhq/mooring/internal/devenv"
	"github.com/mooringhq/mooring/internal/localcluster"
	"github.com/mooringhq/mooring/internal/manager"
	"github.com/mooringhq/mooring/internal/testutil"
)

// Env is a running local cluster with Mooring installed and, unless stopped, its operator.
type Env struct {
	// Root is the repository root; BinDir holds kubectl and the control-plane binaries.
	Root, BinDir string
	// StateDir holds the cluster's state and logs and the operator's log (mooring.log),
	// or, on a shared cluster, what the package adds (its portals' logs, say); it is
	// kept when the package fails.
	StateDir string
	// Kubeconfig is the cluster admin's kubeconfig.
	Kubeconfig string
	// OperatorBin is the operator built from this checkout.
	OperatorBin string
	// OperatorKubeconfig authenticates as the operator's ServiceAccount.
	OperatorKubeconfig string
	// WebhookPort is where the operator serves its webhooks on 127.0.0.1.
	WebhookPort int
	// Cluster is the cluster the package started, nil on a shared one.
	Cluster *localcluster.Cluster
	// Operator is the running operator the package started, nil while stopped and on
	// a shared cluster.
	Operator *localcluster.Operator
	// operatorExtra are the extra flags Operator was started with (EnsureOperator
	// restarts one whose flags are not what it is asked for).
	operatorExtra []string
	// operatorMu keeps parallel tests' EnsureOperator from starting two operators.
	operatorMu sync.Mutex
	// Config and Client act as the cluster admin.
	Config *rest.Config
	Client client.Client

	// sharedDir is the state directory of the shared cluster the Env attached to, ""
	// when the package started its own.
	sharedDir string

	// auditLog is kube-apiserver's log of the operator's writes, "" unless
	// Options.AuditOperatorWrites.
	auditLog string

	mu sync.Mutex
	// expectedPasswords are the Secrets declared with ExpectPassword.
	expectedPasswords []client.ObjectKey
	// cleanups are the functions registered with Cleanup, in order.
	cleanups []func() error
}

// Options tune Main.
type Options struct {
	// Name prefixes the state directory, e.g. "e2e" or "faults".
	Name string
	// OperatorArgs are extra flags for the first operator start.
	OperatorArgs []string
	// NoOperator leaves the operator stopped after set-up (the package starts it itself).
	NoOperator bool
	// Bare starts the cluster and builds the operator but installs nothing (no CRDs,
	// webhooks or operator identity) and starts no operator: for a package that installs
	// Mooring itself, e.g. with the Helm chart.
	Bare bool
	// APIServerArgs are extra kube-apiserver flags.
	APIServerArgs []string
	// AuditOperatorWrites has kube-apiserver log every write of the operator's
	// ServiceAccount, so a test can count those to its own namespace (OperatorWrites).
	AuditOperatorWrites bool
	// Shared says the package leaves the cluster and the operator as it found them (no
	// restart, no other flags, no write counts, nothing cluster-wide deleted that
	// another package needs), so it attaches to the cluster named by MOORING_E2E_CLUSTER
	// when that is set; it starts its own otherwise.
	Shared bool
	// StateDir is where the state goes, a new temporary directory when empty.
	StateDir string
}

// Main is a TestMain: it starts the Env, stores it in *env, runs the tests, and stops
// everything. It fails the package when the operator was denied any request by RBAC, or
// when a password Mooring generated appears in a log, an event or a status, or was not
// looked for although a test declared it (ExpectPassword).
//
// When the e2e tier is not selected (MOORING_TEST_TIERS), or bin/k8s lacks a binary and
// the tier was not selected by name, it runs no test and passes, saying why.
func Main(m *testing.M, env **Env, o Options) {
	binDir := filepath.Join(testutil.RepoRoot(), "bin", "k8s")
	if why, fatal := testutil.Unavailable(testutil.E2E, localcluster.MissingBinaries(binDir)); why != "" {
		fmt.Fprintf(os.Stderr, "%s: skipped: %s\n", o.Name, why)
		if fatal {
			os.Exit(1)
		}
		os.Exit(0)
	}
	code, err := run(m, env, o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", o.Name, err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

func run(m *testing.M, out **Env, o Options) (int, error) {
	start := time.Now()
	e, err := startOrAttach(o)
	if e != nil {
		*out = e
		defer e.stop()
	}
	if err != nil {
		if e != nil {
			fmt.Fprintf(os.Stderr, "%s: logs kept in %s\n", o.Name, e.logsWhere())
		}
		return 1, err
	}
	ready := "cluster and operator ready"
	if e.sharedDir != "" {
		ready = "attached to the shared cluster " + e.sharedDir
	}
	fmt.Fprintf(os.Stderr, "%s: %s in %s\n", o.Name, ready, time.Since(start).Round(100*time.Millisecond))
	code := m.Run()
	// What the tests started for the whole package stops before the checks read its logs.
	if err := e.runCleanups(); err != nil {
		code = 1
		fmt.Fprintf(os.Stderr, "%s: %v\n", o.Name, err)
	}
	if code == 0 {
		// A rule missing from the generated ClusterRole shows up as a forbidden request in
		// the operator's log, even when a retry hid it from the tests.
		if err := e.CheckNotForbidden(); err != nil {
			code = 1
			fmt.Fprintf(os.Stderr, "%s: %v\n", o.Name, err)
		}
		// No generated password in any log, event or Mooring object's status.
		n, err := e.CheckNoSecretsLeaked(context.Background())
		if err != nil {
			code = 1
			fmt.Fprintf(os.Stderr, "%s: %v\n", o.Name, err)
		} else {
			fmt.Fprintf(os.Stderr, "%s: %d generated passwords found in no log, event or status\n", o.Name, n)
		}
	}
	if code != 0 {
		fmt.Fprintf(os.Stderr, "%s: failed; logs kept in %s\n", o.Name, e.logsWhere())
	} else {
		_ = os.RemoveAll(e.StateDir)
	}
	return code, nil
}

// Start builds the operator, starts a cluster, installs Mooring and starts the operator
// (unless o.NoOperator). On error the returned Env, if not nil, must still be stopped.
func Start(o Options) (*Env, error) {
	root, err := filepath.Abs(testutil.RepoRoot())
	if err != nil {
		return nil, err
	}
	e := &Env{Root: root, BinDir: filepath.Join(root, "bin", "k8s")}
	if missing := localcluster.MissingBinaries(e.BinDir); len(missing) > 0 {
		return nil, fmt.Errorf("%v missing in %s: run `make tools`", missing, e.BinDir)
	}
	if e.StateDir = o.StateDir; e.StateDir == "" {
		e.StateDir, err = os.MkdirTemp("", "mooring-"+o.Name+"-")
	} else {
		err = os.MkdirAll(e.StateDir, 0o755)
	}
	if err != nil {
		return nil, err
	}
	// The operator `make test-e2e` built once for every package, else built from this
	// checkout now, so a test never runs a stale binary.
	if e.OperatorBin, err = testutil.Binary(testutil.OperatorBinEnv, "./cmd/mooring", filepath.Join(e.StateDir, "mooring")); err != nil {
		return e, err
	}

	apiServerArgs := o.APIServerArgs
	if o.AuditOperatorWrites {
		audit, err := e.auditArgs()
		if err != nil {
			return e, err
		}
		apiServerArgs = append(slices.Clip(apiServerArgs), audit...)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if e.Cluster, err = localcluster.Start(ctx, localcluster.Options{
		BinDir: e.BinDir, StateDir: filepath.Join(e.StateDir, "cluster"), Out: os.Stderr,
		APIServerArgs: apiServerArgs,
	}); err != nil {
		return e, err
	}
	e.Config, e.Kubeconfig = e.Cluster.Config, e.Cluster.KubeconfigPath
	if e.Client, err = client.New(e.Config, client.Options{Scheme: manager.Scheme}); err != nil {
		return e, err
	}
	if o.Bare {
		return e, nil
	}
	if e.WebhookPort, err = localcluster.FreePort(); err != nil {
		return e, err
	}
	if err := devenv.Install(ctx, e.Config, root, e.WebhookPort); err != nil {
		return e, err
	}
	// The operator runs with the generated ClusterRole only, as in production.
	if e.OperatorKubeconfig, err = devenv.OperatorKubeconfig(ctx, e.Config, root, e.StateDir); err != nil {
		return e, err
	}
	if o.NoOperator {
		return e, nil
	}
	if err := e.StartOperator(ctx, o.OperatorArgs...); err != nil {
		return e, err
	}
	if err := testutil.Poll(time.Minute, func() error { return devenv.WebhooksReady(ctx, e.Config) }); err != nil {
		return e, fmt.Errorf("webhooks not ready: %w", err)
	}
	return e, nil
}

// OperatorArgs are the flags every operator of the Env runs with: webhooks on localhost
// with a self-made certificate, leader election off (extra args may turn it on).
func (e *Env) OperatorArgs(extra ...string) []string {
	args := append(devenv.OperatorArgs(e.StateDir, e.WebhookPort), "--leader-elect=false")
	return append(args, extra...)
}

// StartOperator runs the operator binary against the cluster, appending to
// <state>/mooring.log, and returns once it is ready.
func (e *Env) StartOperator(ctx context.Context, extraArgs ...string) error {
	op, err := e.StartOperatorProcess(ctx, "mooring.log", e.OperatorArgs(extraArgs...)...)
	if err != nil {
		return err
	}
	e.Operator, e.operatorExtra = op, slices.Clone(extraArgs)
	return nil
}

// StartOperatorProcess runs one more operator process with exactly args, logging to
// <state>/<logName>; the caller stops it. Tests of leader election run two this way.
func (e *Env) StartOperatorProcess(ctx context.Context, logName string, args ...string) (*localcluster.Operator, error) {
	if e.sharedDir != "" {
		return nil, errNotShared("start an operator")
	}
	return localcluster.StartOperator(ctx, localcluster.OperatorOptions{
		Binary:     e.OperatorBin,
		Kubeconfig: e.OperatorKubeconfig,
		LogPath:    filepath.Join(e.StateDir, logName),
		Args:       args,
	})
}

// StopOperator stops the operator started by StartOperator, if it runs.
func (e *Env) StopOperator() error {
	if e.sharedDir != "" {
		return errNotShared("stop the operator")
	}
	if e.Operator == nil {
		return nil
	}
	err := e.Operator.Stop()
	e.Operator, e.operatorExtra = nil, nil
	return err
}

// Kubectl returns a kubectl command acting as the cluster admin.
func (e *Env) Kubectl(args ...string) *exec.Cmd {
	return exec.Command(filepath.Join(e.BinDir, "kubectl"), append([]string{"--kubeconfig", e.Kubeconfig}, args...)...)
}

// KubectlContext is Kubectl killed when ctx ends: a check polled with a deadline must not
// wait longer than it for an API server that does not answer.
func (e *Env) KubectlContext(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, filepath.Join(e.BinDir, "kubectl"), append([]string{"--kubeconfig", e.Kubeconfig}, args...)...)
	// Once kubectl is killed, stop waiting for its output pipes too.
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// CheckNotForbidden fails when any operator log of the Env (the shared cluster's too)
// shows a request denied by RBAC.
func (e *Env) CheckNotForbidden() error {
	var logs []string
	for _, dir := range e.stateDirs() {
		l, _ := filepath.Glob(filepath.Join(dir, "*.log"))
		logs = append(logs, l...)
	}
	for _, path := range logs {
		log, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if i := bytes.Index(log, []byte("is forbidden")); i >= 0 {
			start := max(0, bytes.LastIndexByte(log[:i], '\n'))
			return fmt.Errorf("the operator was denied a request by RBAC (%s): %s", filepath.Base(path), log[start:min(len(log), i+300)])
		}
	}
	return nil
}

// Cleanup registers f to run once the package's tests have ended (or it is stopped
// early), before the cluster stops, the last registered first: t.Cleanup for what a test
// starts on behalf of the whole package, such as shared portal replicas.
func (e *Env) Cleanup(f func() error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.cleanups = append(e.cleanups, f)
}

// runCleanups runs and forgets the registered cleanups, returning their errors.
func (e *Env) runCleanups() error {
	e.mu.Lock()
	fs := e.cleanups
	e.cleanups = nil
	e.mu.Unlock()
	var errs []error
	for i := len(fs) - 1; i >= 0; i-- {
		errs = append(errs, fs[i]())
	}
	return errors.Join(errs...)
}

func (e *Env) stop() {
	_ = e.runCleanups()
	_ = e.StopOperator()
	if e.Cluster != nil {
		_ = e.Cluster.Stop()
	}
}
