package localcluster

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"
)

// process is one child process whose output goes to a log file.
type process struct {
	name     string
	logPath  string
	logStart int64 // size of the log before this run, so tails show this run only
	cmd      *exec.Cmd
	started  time.Time
	done     chan struct{}
	err      error // exit status; valid once done is closed
	stopping atomic.Bool
	// ready is the ready check of this run when it differs from its unit's.
	ready check
}

// processSpec describes a child process to start.
type processSpec struct {
	name    string
	path    string
	args    []string
	env     []string // added to the parent's environment
	logPath string
	echo    io.Writer // optional second copy of the output
}

// startProcess starts s in its own process group (so a Ctrl-C in the terminal reaches
// only the parent, which stops children in order) and, on Linux, with a parent-death
// signal so no child outlives a parent that dies without calling stop.
func startProcess(s processSpec) (*process, error) {
	if err := os.MkdirAll(filepath.Dir(s.logPath), 0o755); err != nil {
		return nil, fmt.Errorf("create log dir: %w", err)
	}
	f, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open %s log: %w", s.name, err)
	}
	st, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("stat %s log: %w", s.name, err)
	}
	fmt.Fprintf(f, "==== %s %s %s\n", time.Now().Format(time.RFC3339), s.path, strings.Join(s.args, " "))

	cmd := exec.Command(s.path, s.args...)
	cmd.Env = append(os.Environ(), s.env...)
	cmd.Stdout, cmd.Stderr = f, f
	if s.echo != nil {
		w := io.MultiWriter(f, s.echo)
		cmd.Stdout, cmd.Stderr = w, w
		// With a non-file writer Wait also waits for the copy; bound it in case a
		// grandchild keeps the pipe open.
		cmd.WaitDelay = 5 * time.Second
	}
	cmd.SysProcAttr = childSysProcAttr()
	if err := cmd.Start(); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("start %s: %w", s.name, err)
	}
	p := &process{name: s.name, logPath: s.logPath, logStart: st.Size(), cmd: cmd, started: time.Now(), done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		_ = f.Close()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process has ended.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM to the process group, waits up to grace, then sends SIGKILL.
// It reports whether SIGKILL was needed.
//
//nolint:unparam // the grace is the caller's to choose; all callers use stopGrace today
func (p *process) stop(grace time.Duration) (killed bool, err error) {
	p.stopping.Store(true)
	if p.exited() {
		return false, nil
	}
	signalGroup(p.cmd.Process, terminate)
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-p.done:
		return false, nil
	case <-timer.C:
	}
	signalGroup(p.cmd.Process, kill)
	select {
	case <-p.done:
		return true, nil
	case <-time.After(10 * time.Second):
		return true, fmt.Errorf("%s (pid %d) still running after SIGKILL", p.name, p.cmd.Process.Pid)
	}
}

// pid is the process id.
func (p *process) pid() int { return p.cmd.Process.Pid }

// status is how the process ended, e.g. "exit status 1" or "signal: killed"; valid once
// done is closed.
func (p *process) status() string {
	if p.err != nil {
		return p.err.Error()
	}
	return "exit status 0"
}

// exitError describes an unexpected exit with the log path and the last log lines, so
// the caller's error message is enough to diagnose a failed start.
func (p *process) exitError() error {
	return fmt.Errorf("%s exited (%s); log %s:\n%s", p.name, p.status(), p.logPath, p.tail(15))
}

// failure wraps err with the log path and tail of p.
func (p *process) failure(err error) error {
	return fmt.Errorf("%s: %w; log %s:\n%s", p.name, err, p.logPath, p.tail(15))
}

// tail returns up to n last lines this run wrote to the log, indented.
func (p *process) tail(n int) string {
	return logTail(p.logPath, p.logStart, n)
}

func logTail(path string, from int64, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return "    (no log: " + err.Error() + ")"
	}
	defer func() { _ = f.Close() }()
	const maxRead = 64 << 10
	st, err := f.Stat()
	if err != nil {
		return "    (no log: " + err.Error() + ")"
	}
	start := max(from, st.Size()-maxRead)
	buf := make([]byte, st.Size()-start)
	if _, err := f.ReadAt(buf, start); err != nil && !errors.Is(err, io.EOF) {
		return "    (unreadable log: " + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(bytes.ToValidUTF8(buf, nil)), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "    " + strings.Join(lines, "\n    ")
}
