package clusterenv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mooringhq/mooring/internal/devenv"
	"github.com/mooringhq/mooring/internal/manager"
	"github.com/mooringhq/mooring/internal/testutil"
)

// SharedEnv names the environment variable holding the state directory of the cluster
// hack/e2ecluster runs for a whole `make test`; the packages with Options.Shared attach
// to it. Unset, every package starts its own cluster.
const SharedEnv = "MOORING_E2E_CLUSTER"

// sharedFile, in the shared cluster's state directory, says how to reach it; it is
// written once the cluster and the operator are ready, so its presence means ready.
const sharedFile = "shared-cluster.json"

// sharedState is what a package needs to act on the shared cluster as its own.
type sharedState struct {
	Kubeconfig         string `json:"kubeconfig"`
	OperatorKubeconfig string `json:"operatorKubeconfig"`
	OperatorBin        string `json:"operatorBin"`
	WebhookPort        int    `json:"webhookPort"`
	Pid                int    `json:"pid"`
}

// Serve runs the shared cluster: it starts a cluster with Mooring and its operator in
// dir (emptied first), writes the file that lets packages attach, and stops everything
// once ctx ends. The operator's RBAC denials are reported then, as a package's Main
// would. It is hack/e2ecluster's "run".
func Serve(ctx context.Context, dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	e, err := Start(Options{Name: "shared", StateDir: dir})
	if e != nil {
		defer e.stop()
	}
	if err != nil {
		return err
	}
	st := sharedState{Kubeconfig: e.Kubeconfig, OperatorKubeconfig: e.OperatorKubeconfig,
		OperatorBin: e.OperatorBin, WebhookPort: e.WebhookPort, Pid: os.Getpid()}
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	// Written whole under another name first: a reader never sees half a file.
	tmp := filepath.Join(dir, sharedFile+".tmp")
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, sharedFile)); err != nil {
		return err
	}
	// Gone with the cluster, so a package sent to it fails at once naming what is missing.
	defer func() { _ = os.Remove(filepath.Join(dir, sharedFile)) }()
	fmt.Fprintf(os.Stderr, "shared: cluster and operator ready; %s=%s\n", SharedEnv, dir)
	select {
	case <-ctx.Done():
	case err := <-e.Operator.Exited():
		return fmt.Errorf("the shared operator exited: %w", err)
	}
	return e.CheckNotForbidden()
}

// SharedReady reports whether the shared cluster in dir is ready to attach to.
func SharedReady(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, sharedFile))
	return err == nil
}

// startOrAttach attaches to the shared cluster when the package may share one and one
// is named, and starts the package's own otherwise.
func startOrAttach(o Options) (*Env, error) {
	if dir := os.Getenv(SharedEnv); o.Shared && dir != "" {
		return attach(o, dir)
	}
	return Start(o)
}

// attach returns an Env on the shared cluster in dir, with a state directory of the
// package's own for what it adds.
func attach(o Options, dir string) (*Env, error) {
	root, err := filepath.Abs(testutil.RepoRoot())
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(filepath.Join(dir, sharedFile))
	if err != nil {
		return nil, fmt.Errorf("%s=%s names no running shared cluster (start one with hack/e2ecluster): %w", SharedEnv, dir, err)
	}
	var st sharedState
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, fmt.Errorf("read %s: %w", sharedFile, err)
	}
	e := &Env{Root: root, BinDir: filepath.Join(root, "bin", "k8s"), sharedDir: dir,
		Kubeconfig: st.Kubeconfig, OperatorKubeconfig: st.OperatorKubeconfig,
		OperatorBin: st.OperatorBin, WebhookPort: st.WebhookPort}
	if e.StateDir, err = os.MkdirTemp("", "mooring-"+o.Name+"-"); err != nil {
		return nil, err
	}
	if e.Config, err = clientcmd.BuildConfigFromFlags("", st.Kubeconfig); err != nil {
		return e, err
	}
	if e.Client, err = client.New(e.Config, client.Options{Scheme: manager.Scheme}); err != nil {
		return e, err
	}
	// The cluster answers and the operator serves its webhooks: the file may outlive them.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := testutil.Poll(time.Minute, func() error { return devenv.WebhooksReady(ctx, e.Config) }); err != nil {
		return e, fmt.Errorf("shared cluster %s: webhooks not ready: %w", dir, err)
	}
	return e, nil
}

// stateDirs are the directories holding the Env's logs: the package's, and the shared
// cluster's when it attached to one.
func (e *Env) stateDirs() []string {
	if e.sharedDir == "" {
		return []string{e.StateDir}
	}
	return []string{e.StateDir, e.sharedDir}
}

// logsWhere says where to look for the logs when the package failed.
func (e *Env) logsWhere() string {
	if e.sharedDir == "" {
		return e.StateDir + " (cluster/logs/, mooring.log)"
	}
	return fmt.Sprintf("%s (the package's) and %s (the shared cluster's: cluster/logs/, mooring.log)", e.StateDir, e.sharedDir)
}

// errNotShared is what an Env on a shared cluster answers to what would disturb the
// other packages on it.
func errNotShared(what string) error {
	return errors.New("clusterenv: cannot " + what + " on the shared cluster: a package that does must not set Options.Shared")
}
