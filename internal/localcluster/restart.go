package localcluster

import (
	"context"
	"fmt"
	"time"
)

// Component names Restart accepts.
const (
	Etcd          = etcd
	KubeAPIServer = kubeAPIServer
)

// StopComponent stops one running component (SIGTERM, SIGKILL after the grace period)
// and leaves the others running, as when a control-plane node loses one of its processes.
// The component stays stopped, whatever the Supervisor's Backoff, until StartComponent
// starts it again; Stop still stops everything. Tests of faults take kube-apiserver or
// etcd away under a running operator this way.
func (c *Cluster) StopComponent(name string) error {
	u, err := c.component(name)
	if err != nil {
		return err
	}
	if _, err := u.stop(); err != nil {
		return fmt.Errorf("localcluster: stop %s: %w", name, err)
	}
	fmt.Fprintf(c.out, "localcluster: %s stopped\n", name)
	return nil
}

// killComponent is StopComponent without the grace: the process is killed at once, as
// when its machine dies.
func (c *Cluster) killComponent(name string) error {
	u, err := c.component(name)
	if err != nil {
		return err
	}
	if _, err := u.stopWithin(0); err != nil {
		return fmt.Errorf("localcluster: kill %s: %w", name, err)
	}
	fmt.Fprintf(c.out, "localcluster: %s killed\n", name)
	return nil
}

// StartComponent starts a component stopped by StopComponent again, with the same flags,
// ports and data, and returns once it is ready.
func (c *Cluster) StartComponent(ctx context.Context, name string) error {
	u, err := c.component(name)
	if err != nil {
		return err
	}
	t0 := time.Now()
	if _, err := u.start(ctx, false); err != nil {
		return fmt.Errorf("localcluster: start %s: %w", name, err)
	}
	fmt.Fprintf(c.out, "localcluster: %s started again, ready (%s)\n", name, since(t0))
	return nil
}

// Restart is StopComponent and StartComponent: it returns how long the component was
// down, from the stop signal until it was ready again.
func (c *Cluster) Restart(ctx context.Context, name string) (time.Duration, error) {
	u, err := c.component(name)
	if err != nil {
		return 0, err
	}
	return u.restart(ctx)
}

func (c *Cluster) component(name string) (*unit, error) {
	for _, u := range c.units {
		if u.name == name {
			return u, nil
		}
	}
	return nil, fmt.Errorf("localcluster: no component %q", name)
}
