package localcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Readiness timeouts are generous because the machines this runs on may be busy
// compiling; a healthy component is ready in a few seconds.
const (
	componentTimeout = 2 * time.Minute
	// stopGrace is how long a component may take to shut down after SIGTERM.
	stopGrace = 20 * time.Second
)

// Cluster is a running local control plane started by Start.
type Cluster struct {
	// KubeconfigPath is the admin kubeconfig, <StateDir>/kubeconfig.
	KubeconfigPath string
	// Config is the admin client configuration (group system:masters).
	Config *rest.Config
	// StateDir is the absolute state directory.
	StateDir string

	out    io.Writer
	layout layout
	// sup watches the components (Options.Supervisor, or one that never restarts);
	// units are this cluster's, in start order.
	sup *Supervisor
	// unitsMu guards units: the real nodes' components start side by side.
	unitsMu sync.Mutex
	units   []*unit
	// node is the real nodes, nil when the cluster runs on simulated nodes only.
	node        *realNode
	nodeStopped bool
	// runtimes is closed once the real nodes' containerds have started and have the
	// images, or failed to (runtimesErr): they start beside the control plane.
	runtimes    chan struct{}
	runtimesErr error
	// volumes provisions the default StorageClass's volumes.
	volumes *volumeProvisioner

	stopOnce sync.Once
	stopErr  error
}

// Start starts etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok
// in that order, waiting for each to be ready, creates the simulated nodes and the
// default StorageClass, and returns once the nodes are Ready and default/default
// ServiceAccount exists, so pods can be created at once.
//
// ctx bounds only the start: cancelling it later does not stop the cluster; Stop does.
// On error everything already started is stopped again.
func Start(ctx context.Context, o Options) (*Cluster, error) {
	o, err := o.complete()
	if err != nil {
		return nil, err
	}
	began := time.Now()
	c := &Cluster{
		KubeconfigPath: filepath.Join(o.StateDir, "kubeconfig"),
		StateDir:       o.StateDir,
		out:            o.Out,
		layout:         newLayout(o.StateDir),
		sup:            o.Supervisor,
	}
	if c.sup == nil {
		c.sup = NewSupervisor(Backoff{}, o.Out)
	}
	fmt.Fprintf(o.Out, "localcluster: starting in %s (logs in %s)\n", o.StateDir, c.layout.logs)
	if err := c.takeRealNode(ctx, o); err != nil {
		return nil, fmt.Errorf("localcluster: real node: %w", err)
	}
	if c.node != nil {
		c.startRuntimes(ctx, o)
	}
	if err := c.start(ctx, o); err != nil {
		_ = c.Stop()
		return nil, fmt.Errorf("localcluster: %w", err)
	}
	fmt.Fprintf(o.Out, "localcluster: cluster ready in %s, kubeconfig %s\n", since(began), c.KubeconfigPath)
	return c, nil
}

// writeIdentities loads or makes the cluster's CA, the API server's serving certificate,
// the admin's and each component's client certificates and the service-account key,
// picks the components' ports and writes their kubeconfigs (and the admin's, at
// KubeconfigPath). It returns what the rest of the start needs: the CA, the admin's key
// pair and the service-account key's path.
func (c *Cluster) writeIdentities() (*pki, keyPair, string, error) {
	l := &c.layout
	ca, err := loadOrCreatePKI(l.pki)
	if err != nil {
		return nil, keyPair{}, "", err
	}
	if _, err := ca.leaf(certSpec{name: "serving", cn: kubeAPIServer, server: true}); err != nil {
		return nil, keyPair{}, "", err
	}
	admin, err := ca.leaf(certSpec{name: "admin", cn: "mooring-admin", orgs: []string{"system:masters"}})
	if err != nil {
		return nil, keyPair{}, "", err
	}
	saKey, err := loadOrCreateSAKey(l.pki)
	if err != nil {
		return nil, keyPair{}, "", err
	}
	ports, err := freePorts(5)
	if err != nil {
		return nil, keyPair{}, "", err
	}
	l.etcdClient, l.etcdPeer, l.apiserver, l.controllerManager, l.scheduler = ports[0], ports[1], ports[2], ports[3], ports[4]

	// Each component gets its own identity: the controller-manager and the scheduler
	// the users the default RBAC policy grants their permissions to, kwok admin
	// rights because it writes node and pod status on behalf of kubelets.
	users := map[string]certSpec{
		controllerManager: {cn: "system:kube-controller-manager"},
		scheduler:         {cn: "system:kube-scheduler"},
		kwokController:    {cn: "kwok", orgs: []string{"system:masters"}},
	}
	for component, spec := range users {
		spec.name = component
		kp, err := ca.leaf(spec)
		if err != nil {
			return nil, keyPair{}, "", err
		}
		if err := writeKubeconfig(l.componentKubeconfig(component), l.serverURL(), ca.caPEM, kp); err != nil {
			return nil, keyPair{}, "", err
		}
	}
	if err := writeKubeconfig(c.KubeconfigPath, l.serverURL(), ca.caPEM, admin); err != nil {
		return nil, keyPair{}, "", err
	}
	return ca, admin, saKey, nil
}

func (c *Cluster) start(ctx context.Context, o Options) error {
	l := &c.layout
	for _, dir := range []string{l.state, l.logs, l.kubeconfigs, l.kwok} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("create %s: %w", dir, err)
		}
	}
	ca, admin, saKey, err := c.writeIdentities()
	if err != nil {
		return err
	}
	serverArgs := apiserverArgs(*l, saKey)
	if c.node != nil {
		kubeletClient, err := c.node.writeNodePKI(ca, *l)
		if err != nil {
			return err
		}
		serverArgs = append(serverArgs, kubeletClient...)
	}
	c.Config = restConfig(l.serverURL(), ca.caPEM, admin)
	if err := writeKwokConfig(o.BinDir, l.kwokConfig()); err != nil {
		return err
	}
	probe, err := tlsClient(ca.caPEM, admin)
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}

	if _, err := c.launch(ctx, o, etcd, etcdArgs(*l), "", httpOK(http.DefaultClient, l.etcdURL()+"/health")); err != nil {
		return err
	}
	apiserver, err := c.launch(ctx, o, kubeAPIServer, append(serverArgs, o.APIServerArgs...), "", httpOK(probe, l.serverURL()+"/readyz"))
	if err != nil {
		return err
	}
	// Nodes and the StorageClass exist before the controllers start, so they act on
	// them from their first sync.
	if err := ensureStorageClass(ctx, cs, c.node != nil); err != nil {
		return apiserver.failure(err)
	}
	// Endpoints are deprecated, which the API server says on every request for them;
	// the warning is no news to anyone reading the start's output.
	quiet := rest.CopyConfig(c.Config)
	quiet.WarningHandler = rest.NoWarnings{}
	if err := alignKubernetesEndpoints(ctx, kubernetes.NewForConfigOrDie(quiet), int32(l.apiserver)); err != nil {
		return apiserver.failure(fmt.Errorf("point the kubernetes Service at port %d: %w", l.apiserver, err))
	}
	if c.volumes, err = startVolumes(cs, l.state, c.node != nil, o.Out); err != nil {
		return err
	}
	if err := ensureNodes(ctx, cs, o.Nodes); err != nil {
		return apiserver.failure(err)
	}
	kcmArgs, kwokLease := controllerManagerArgs(*l, saKey), 40
	if c.node != nil {
		kcmArgs, kwokLease = append(kcmArgs, nodeLifecycleArgs()...), nodeLeaseSeconds
	}
	kcm, err := c.launch(ctx, o, controllerManager, kcmArgs, "",
		httpOK(probe, "https://127.0.0.1:"+strconv.Itoa(l.controllerManager)+"/healthz"))
	if err != nil {
		return err
	}
	if _, err := c.launch(ctx, o, scheduler, schedulerArgs(*l), "",
		httpOK(probe, "https://127.0.0.1:"+strconv.Itoa(l.scheduler)+"/healthz")); err != nil {
		return err
	}
	if err := releaseNodeLeases(ctx, cs); err != nil {
		return apiserver.failure(err)
	}
	// Lease times come from the same clock; the second covers their rounding.
	kwokStart := time.Now().Add(-time.Second)
	// A kwok started again frees the leases its previous run held, as here, and waits
	// for renewals by itself.
	kwokAgain := func(ctx context.Context) (check, error) {
		if err := releaseNodeLeases(ctx, cs); err != nil {
			return nil, err
		}
		return nodesReady(cs, o.Nodes, time.Now().Add(-time.Second)), nil
	}
	if _, err := c.launchUnit(ctx, launchSpec{path: filepath.Join(o.BinDir, kwokController), name: kwokController,
		args: kwokArgs(*l, kwokLease), env: kwokEnv(*l), note: fmt.Sprintf(", %d nodes Ready", o.Nodes),
		ready: nodesReady(cs, o.Nodes, kwokStart), prepare: kwokAgain}); err != nil {
		return err
	}
	t0 := time.Now()
	if err := waitFor(ctx, kcm, "ServiceAccount default/default", componentTimeout, defaultServiceAccount(cs)); err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "localcluster: default ServiceAccount ready (%s)\n", since(t0))
	if c.node != nil {
		return c.startRealNode(ctx, o, cs)
	}
	// A state directory that had a real node before runs without it now: its simulated
	// nodes take the workloads again.
	return setSimulatedTaints(ctx, cs, o.Nodes, false)
}

// takeRealNode prepares the real node when o asks for one and the machine allows it.
// With RealNodeAuto, a machine that does not is said in one line and the cluster runs
// on its simulated nodes.
func (c *Cluster) takeRealNode(ctx context.Context, o Options) error {
	if o.RealNode == RealNodeOff {
		return nil
	}
	err := RealNodeSupport(o.BinDir)
	if err == nil {
		c.node, err = prepareRealNode(ctx, o)
	}
	if err != nil {
		if o.RealNode == RealNodeOn {
			return err
		}
		fmt.Fprintf(o.Out, "localcluster: no real node: %v; pods run on simulated nodes only\n", err)
		return nil
	}
	c.layout.host = nodeIP
	return nil
}

// HasRealNode reports whether the cluster runs a real node (RealNodeName).
func (c *Cluster) HasRealNode() bool { return c.node != nil }

// RealNodes are the names of the cluster's real nodes, RealNodeName first; none when it
// runs on simulated nodes only.
func (c *Cluster) RealNodes() []string {
	if c.node == nil {
		return nil
	}
	return RealNodeNames(len(c.node.members))
}

// launch starts a component, has the supervisor watch it for unexpected exits and
// waits until ready holds, then prints a progress line with the time it took.
func (c *Cluster) launch(ctx context.Context, o Options, name string, args []string, note string, ready check) (*process, error) {
	return c.launchPath(ctx, filepath.Join(o.BinDir, name), name, args, note, ready)
}

// launchPath is launch for a binary outside Options.BinDir (containerd).
func (c *Cluster) launchPath(ctx context.Context, path, name string, args []string, note string, ready check) (*process, error) {
	return c.launchUnit(ctx, launchSpec{path: path, name: name, args: args, note: note, ready: ready})
}

// launchSpec is how a component of the cluster starts.
type launchSpec struct {
	path, name string
	args, env  []string
	note       string // added to the progress line, e.g. ", 3 nodes Ready"
	ready      check
	// prepare runs before every start after the first; see unit.prepare.
	prepare func(ctx context.Context) (check, error)
}

func (c *Cluster) launchUnit(ctx context.Context, s launchSpec) (*process, error) {
	t0 := time.Now()
	u := newUnit(s.name, processSpec{path: s.path, args: s.args, env: s.env, logPath: c.layout.logFile(s.name)}, s.ready)
	u.prepare = s.prepare
	if err := c.sup.register(u); err != nil {
		return nil, err
	}
	c.unitsMu.Lock()
	c.units = append(c.units, u)
	c.unitsMu.Unlock()
	p, err := u.start(ctx, true)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(c.out, "localcluster: %s ready%s (%s)\n", s.name, s.note, since(t0))
	return p, nil
}

// Exited delivers an error for each component that exits without Stop being called,
// naming it and carrying its log tail, when its Supervisor does not restart it (the
// default). A cluster with a dead component is unusable; callers typically stop it and
// report the error. With Options.Supervisor this is that Supervisor's Exited.
func (c *Cluster) Exited() <-chan error { return c.sup.Exited() }

// Supervisor is the Supervisor watching the cluster's components.
func (c *Cluster) Supervisor() *Supervisor { return c.sup }

// Stop stops the real nodes' components, then the control plane's, each in reverse
// start order: SIGTERM, then SIGKILL after a grace period. It waits for every process to
// exit, so their ports are free when it returns. It is safe to call more than once.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() {
		if c.runtimes != nil {
			<-c.runtimes // a start that failed may still be starting them
		}
		c.volumes.shutdown()
		if len(c.units) == 0 {
			c.stopErr = c.stopRealNode()
			return
		}
		t0 := time.Now()
		// Hold all first: a component that exits because another one is gone is
		// part of the shutdown, not a failure to report or restart.
		for _, u := range c.units {
			u.hold()
		}
		var errs []error
		order := stopOrder(c.units)
		lastContainerd := -1
		for i, u := range order {
			if isComponent(u.name, containerdComponent) {
				lastContainerd = i
			}
		}
		for i, u := range order {
			killed, err := u.stop()
			if err != nil {
				errs = append(errs, err)
			} else if killed {
				fmt.Fprintf(c.out, "localcluster: %s ignored SIGTERM for %s, killed\n", u.name, stopGrace)
			}
			// The containers outlive containerd; once every node's containerd is stopped,
			// every node's containers go, before the control plane, or
			// their open watches would hold the API server's shutdown up. The network
			// stays until the end: the API server listens on the bridge's address and
			// talks to itself there while it shuts down (without it, those requests
			// wander off towards the default route and the shutdown waits out its
			// timeouts: 38s instead of seconds).
			if i == lastContainerd && c.node != nil {
				errs = append(errs, removeNodeState(c.node.paths))
			}
		}
		errs = append(errs, c.stopRealNode())
		c.stopErr = errors.Join(errs...)
		if c.stopErr == nil {
			fmt.Fprintf(c.out, "localcluster: stopped (%s)\n", since(t0))
		}
	})
	return c.stopErr
}

// stopOrder is the order Stop stops units in: the real nodes' components first, then
// the control plane's, each in reverse start order. The nodes' containerds start beside
// the control plane, so start order alone would stop them after it.
func stopOrder(units []*unit) []*unit {
	var node, rest []*unit
	for i := len(units) - 1; i >= 0; i-- {
		if isNodeComponent(units[i].name) {
			node = append(node, units[i])
		} else {
			rest = append(rest, units[i])
		}
	}
	return append(node, rest...)
}

// since formats the time since t for progress lines, e.g. "1.2s".
func since(t time.Time) string {
	return time.Since(t).Round(100 * time.Millisecond).String()
}

// EtcdURL is etcd's client URL, for tests that check what the API server stored.
func (c *Cluster) EtcdURL() string { return c.layout.etcdURL() }

// stopRealNode removes the real node's containers, mounts, network and state once its
// processes are stopped.
func (c *Cluster) stopRealNode() error {
	if c.node == nil || c.nodeStopped {
		return nil
	}
	c.nodeStopped = true
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.node.stop(ctx); err != nil {
		return fmt.Errorf("real node: %w", err)
	}
	return nil
}
