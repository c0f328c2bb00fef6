package localcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

// PortalOptions configures StartPortal.
type PortalOptions struct {
	// Binary is the portal executable (bin/mooring-portal).
	Binary string
	// Kubeconfig is the portal's identity (passed as --kubeconfig).
	Kubeconfig string
	// LogPath receives the portal's output, appended; Echo gets a copy when set.
	LogPath string
	Echo    io.Writer
	// Args are extra flags; --bind-address is set here on Port of 127.0.0.1.
	Args []string
	// Port is where the portal serves; a free port when 0. A caller that must tell
	// others the portal's URL before it starts (an OpenID Connect provider its
	// callback) picks it.
	Port int
	// Env is added to the parent's environment.
	Env []string
	// Supervisor, when set, watches the portal as component "portal" and restarts it
	// per its Backoff; without one an unexpected exit is reported on Exited.
	Supervisor *Supervisor
}

// PortalComponent is the portal's name in a Supervisor.
const PortalComponent = "portal"

// Portal is a running mooring-portal process.
type Portal struct {
	// URL is where it serves, http://127.0.0.1:<port>.
	URL     string
	LogPath string

	unit *unit
	sup  *Supervisor
}

// StartPortal runs the portal on a free port of 127.0.0.1 and returns once its
// /readyz answers 200 (the cluster is reachable and the signing keys are loaded).
func StartPortal(ctx context.Context, o PortalOptions) (*Portal, error) {
	if o.Binary == "" || o.LogPath == "" {
		return nil, errors.New("portal: Binary and LogPath are required")
	}
	port := o.Port
	if port == 0 {
		var err error
		if port, err = FreePort(); err != nil {
			return nil, fmt.Errorf("portal: %w", err)
		}
	}
	p := &Portal{URL: "http://127.0.0.1:" + strconv.Itoa(port), LogPath: o.LogPath, sup: o.Supervisor}
	if p.sup == nil {
		p.sup = NewSupervisor(Backoff{}, nil)
	}
	args := []string{"--bind-address", "127.0.0.1:" + strconv.Itoa(port)}
	if o.Kubeconfig != "" {
		args = append(args, "--kubeconfig", o.Kubeconfig)
	}
	p.unit = newUnit(PortalComponent, processSpec{path: o.Binary, args: append(args, o.Args...), env: o.Env,
		logPath: o.LogPath, echo: o.Echo}, httpOK(&http.Client{Timeout: 5 * time.Second}, p.URL+"/readyz"))
	if err := p.sup.register(p.unit); err != nil {
		return nil, fmt.Errorf("portal: %w", err)
	}
	if _, err := p.unit.start(ctx, true); err != nil {
		return nil, err
	}
	return p, nil
}

// Exited delivers an error, with the log tail, if the portal exits without Stop while
// its Supervisor does not restart it. It is the Supervisor's Exited.
func (p *Portal) Exited() <-chan error { return p.sup.Exited() }

// Pid is the process id of the portal's current run.
func (p *Portal) Pid() int { return p.unit.current().pid() }

// Stop sends SIGTERM, waits for the graceful shutdown, then kills; safe to repeat.
func (p *Portal) Stop() error {
	_, err := p.unit.stop()
	return err
}
