package localcluster

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// Component names Restart accepts.
const (
	Etcd          = etcd
	KubeAPIServer = kubeAPIServer
)

// launchSpec is how a component was started: enough to start it again.
type launchSpec struct {
	spec  processSpec
	ready check
}

// StopComponent stops one running component (SIGTERM, SIGKILL after the grace period)
// and leaves the others running, as when a control-plane node loses one of its processes.
// StartComponent starts it again; Stop still stops everything. Tests of faults take
// kube-apiserver or etcd away under a running operator this way.
func (c *Cluster) StopComponent(name string) error {
	i, err := c.component(name)
	if err != nil {
		return err
	}
	if _, err := c.procs[i].stop(stopGrace); err != nil {
		return fmt.Errorf("localcluster: stop %s: %w", name, err)
	}
	fmt.Fprintf(c.out, "localcluster: %s stopped\n", name)
	return nil
}

// StartComponent starts a component stopped by StopComponent again, with the same flags,
// ports and data, and returns once it is ready.
func (c *Cluster) StartComponent(ctx context.Context, name string) error {
	i, err := c.component(name)
	if err != nil {
		return err
	}
	if !c.procs[i].exited() {
		return fmt.Errorf("localcluster: %s is still running", name)
	}
	l := c.launches[name]
	t0 := time.Now()
	p, err := startProcess(l.spec)
	if err != nil {
		return fmt.Errorf("localcluster: start %s: %w", name, err)
	}
	c.procs[i] = p
	c.watchExit(p)
	if err := waitFor(ctx, p, name, componentTimeout, l.ready); err != nil {
		return fmt.Errorf("localcluster: start %s: %w", name, err)
	}
	fmt.Fprintf(c.out, "localcluster: %s started again, ready (%s)\n", name, since(t0))
	return nil
}

// Restart is StopComponent and StartComponent: it returns how long the component was
// down, from the stop signal until it was ready again.
func (c *Cluster) Restart(ctx context.Context, name string) (time.Duration, error) {
	t0 := time.Now()
	if err := c.StopComponent(name); err != nil {
		return 0, err
	}
	if err := c.StartComponent(ctx, name); err != nil {
		return 0, err
	}
	return time.Since(t0), nil
}

func (c *Cluster) component(name string) (int, error) {
	_, ok := c.launches[name]
	i := slices.IndexFunc(c.procs, func(p *process) bool { return p.name == name })
	if !ok || i < 0 {
		return 0, fmt.Errorf("localcluster: no component %q", name)
	}
	return i, nil
}
