package instance

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mooringhq/mooring/internal/version"
)

const (
	// faultRetry is how often a faulted instance checks whether the cause is gone (a
	// volume grown, the image or version put back).
	faultRetry = 10 * time.Second
	// minFreeBytes: below this the volume counts as full. PostgreSQL needs room for a
	// WAL segment (16 MiB) to start; MariaDB for its redo log.
	minFreeBytes = 16 << 20
	// stopGrace bounds a clean shutdown; the pod's terminationGracePeriodSeconds is
	// longer, so the kubelet does not kill the server mid-checkpoint.
	stopGrace = 50 * time.Second
)

// manager runs one instance: the Engine's server as its child, the status server, and
// the fault loop.
type manager struct {
	cfg         Config
	engine      Engine
	st          state
	configured  atomic.Bool
	log         *log.Logger
	signals     signalForwarder
	tokens      tokenCache
	statusCache statusCache
}

// Run is `mooring instance run`: it returns when ctx ends (the pod stops) after a
// clean shutdown of the server, or with an error when the server exits on its own
// without a fault the manager can name (the kubelet then restarts the container).
func Run(ctx context.Context, cfg Config) error {
	e, err := NewEngine(cfg)
	if err != nil {
		return err
	}
	m := &manager{cfg: cfg, engine: e, log: log.New(os.Stderr, "instance: ", log.LstdFlags|log.Lmsgprefix)}
	m.log.Printf("mooring %s: instance manager of %s (%s %s, %s)", version.String(), cfg.Pod, cfg.Engine, cfg.Version, cfg.Role())
	m.st.update(func(s *Status) {
		*s = Status{Pod: cfg.Pod, Engine: cfg.Engine, Version: cfg.Version, ConfiguredRole: cfg.Role(), Phase: "Checking"}
	})
	if err := os.MkdirAll(cfg.RunDir, 0o700); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.StatusAddr)
	if err != nil {
		return fmt.Errorf("status server: %w", err)
	}
	handler, closeMetrics := m.withMetrics(m.handler())
	defer closeMetrics()
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close() //nolint:errcheck // the process is ending
	go reapOrphans(ctx, m.log.Printf)
	m.signals.start(ctx, m.log.Printf)
	return m.loop(ctx)
}

func (m *manager) loop(ctx context.Context) error {
	for {
		if err := m.prepare(ctx); err != nil {
			var f *Fault
			if !errors.As(err, &f) {
				f = &Fault{Reason: FaultInitFailed, Message: err.Error()}
			}
			m.fault(f)
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(faultRetry):
				continue
			}
		}
		err := m.serve(ctx)
		if ctx.Err() != nil {
			return nil
		}
		// The server stopped on its own. A full volume is a cause the manager can name
		// and wait out; anything else restarts the container, as the kubelet would a
		// server run directly, and its log says why.
		if f := m.diskFull(); f != nil {
			m.log.Printf("server exited (%v) with its volume full", err)
			m.fault(f)
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(faultRetry):
				continue
			}
		}
		return fmt.Errorf("server exited: %w", err)
	}
}

// fault records f and logs it once per change.
func (m *manager) fault(f *Fault) {
	changed := false
	m.st.update(func(s *Status) {
		if s.Fault == nil || *s.Fault != *f {
			changed = true
		}
		s.Fault, s.Phase, s.Running = f, "Faulted", false
	})
	if changed {
		m.log.Printf("fault %s: %s (the server stays down; checking again every %s)", f.Reason, f.Message, faultRetry)
		writeTerminationMessage(f.Error())
	}
}

// prepare checks, initialises when needed and configures.
func (m *manager) prepare(ctx context.Context) error {
	m.st.update(func(s *Status) { s.Phase = "Checking" })
	if err := m.engine.Check(ctx); err != nil {
		return err
	}
	if f := m.diskFull(); f != nil {
		return f
	}
	if !m.engine.Initialised() {
		if err := m.guardEmptyVolume(); err != nil {
			return err
		}
		m.st.update(func(s *Status) { s.Phase = "Initialising" })
		m.log.Printf("initialising the data directory as the %s", m.cfg.Role())
		if err := m.engine.Initialise(ctx); err != nil {
			return err
		}
	}
	return m.engine.Configure(ctx)
}

// serve runs the server until it exits or ctx ends.
func (m *manager) serve(ctx context.Context) error {
	cmd := m.engine.Server()
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		return &Fault{Reason: FaultServerFailed, Message: fmt.Sprintf("start %s: %v", cmd.Path, err)}
	}
	m.log.Printf("server started (pid %d)", cmd.Process.Pid)
	m.signals.server.Store(cmd.Process)
	defer m.signals.server.Store(nil)
	m.configured.Store(false)
	m.st.update(func(s *Status) { s.Fault, s.Phase, s.Running, s.Error = nil, "Starting", true, "" })
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	setupCtx, stopSetup := context.WithCancel(ctx)
	defer stopSetup()
	go m.afterStart(setupCtx)
	go m.watchSecrets(setupCtx)
	select {
	case err := <-exited:
		m.st.update(func(s *Status) { s.Running, s.Phase = false, "Stopped" })
		if err == nil {
			err = errors.New("exit status 0")
		}
		return err
	case <-ctx.Done():
	}
	m.st.update(func(s *Status) { s.Phase = "Stopping" })
	m.log.Printf("stopping the server")
	_ = cmd.Process.Signal(m.engine.StopSignal())
	select {
	case err := <-exited:
		m.log.Printf("server stopped (%v)", err)
	case <-time.After(stopGrace):
		_ = cmd.Process.Kill()
		err := <-exited
		m.log.Printf("server killed after %s (%v)", stopGrace, err)
	}
	m.st.update(func(s *Status) { s.Running = false })
	return nil
}

// afterStart waits until the server answers, then runs the engine's set-up until it
// succeeds; the instance is ready only after.
func (m *manager) afterStart(ctx context.Context) {
	delay := 500 * time.Millisecond
	for ctx.Err() == nil {
		err := m.engine.Ready(ctx)
		if err == nil {
			if err = m.engine.AfterStart(ctx); err == nil {
				m.configured.Store(true)
				m.st.update(func(s *Status) { s.Phase, s.Error, s.Cloning = "Running", "", false })
				m.log.Printf("server ready as the %s", m.cfg.Role())
				return
			}
			m.log.Printf("set-up after start: %v", err)
			m.st.update(func(s *Status) { s.Error = err.Error() })
		}
		select {
		case <-ctx.Done():
		case <-time.After(delay):
		}
		delay = min(delay*2, 5*time.Second)
	}
}

// diskFull reports a fault when the data volume has less than minFreeBytes left.
func (m *manager) diskFull() *Fault {
	var fs syscall.Statfs_t
	if err := syscall.Statfs(m.cfg.DataDir, &fs); err != nil {
		return nil
	}
	free := int64(fs.Bavail) * fs.Bsize //nolint:gosec // a block count fits
	if free >= minFreeBytes {
		return nil
	}
	return faultf(FaultDiskFull, "the data volume has %d KiB free, less than the %d MiB the server needs to start; grow spec.storage.size (the volume is expanded in place) and the server starts again",
		free>>10, minFreeBytes>>20)
}

// writeTerminationMessage leaves msg where the kubelet reads a container's termination
// message, so `kubectl describe pod` shows the cause even after a restart.
func writeTerminationMessage(msg string) {
	_ = os.WriteFile("/dev/termination-log", []byte(msg), 0o644)
}

// run runs a command to completion and returns its combined output, and with an error
// the output's last lines, for set-up steps whose output explains a failure. No secret
// is ever an argument: they reach the tools through files or standard input.
func run(cmd *exec.Cmd) (string, error) {
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s: %w: %s", cmd.Args[0], err, lastLines(string(out), 5))
	}
	return string(out), nil
}

// lastLines is the last n non-empty lines of s, joined by " / ".
func lastLines(s string, n int) string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " / ")
}
