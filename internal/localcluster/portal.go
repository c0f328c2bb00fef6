package localcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
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
	// Args are extra flags; --bind-address is set here on a free port of 127.0.0.1.
	Args []string
	// Env is added to the parent's environment.
	Env []string
}

// Portal is a running mooring-portal process.
type Portal struct {
	// URL is where it serves, http://127.0.0.1:<port>.
	URL     string
	LogPath string

	proc   *process
	exited chan error
}

// StartPortal runs the portal on a free port of 127.0.0.1 and returns once its
// /readyz answers 200 (the cluster is reachable and the signing keys are loaded).
func StartPortal(ctx context.Context, o PortalOptions) (*Portal, error) {
	if o.Binary == "" || o.LogPath == "" {
		return nil, errors.New("portal: Binary and LogPath are required")
	}
	port, err := FreePort()
	if err != nil {
		return nil, fmt.Errorf("portal: %w", err)
	}
	p := &Portal{URL: "http://127.0.0.1:" + strconv.Itoa(port), LogPath: o.LogPath, exited: make(chan error, 1)}
	args := []string{"--bind-address", "127.0.0.1:" + strconv.Itoa(port)}
	if o.Kubeconfig != "" {
		args = append(args, "--kubeconfig", o.Kubeconfig)
	}
	p.proc, err = startProcess(processSpec{name: filepath.Base(o.Binary), path: o.Binary,
		args: append(args, o.Args...), env: o.Env, logPath: o.LogPath, echo: o.Echo})
	if err != nil {
		return nil, fmt.Errorf("portal: %w", err)
	}
	go func() {
		<-p.proc.done
		if !p.proc.stopping.Load() {
			p.exited <- p.proc.exitError()
		}
	}()
	if err := waitFor(ctx, p.proc, "portal /readyz", componentTimeout, httpOK(&http.Client{Timeout: 5 * time.Second}, p.URL+"/readyz")); err != nil {
		_ = p.Stop()
		return nil, err
	}
	return p, nil
}

// Exited delivers an error, with the log tail, if the portal exits without Stop.
func (p *Portal) Exited() <-chan error { return p.exited }

// Pid is the portal's process id.
func (p *Portal) Pid() int { return p.proc.cmd.Process.Pid }

// Stop sends SIGTERM, waits for the graceful shutdown, then kills; safe to repeat.
func (p *Portal) Stop() error {
	_, err := p.proc.stop(stopGrace)
	return err
}
