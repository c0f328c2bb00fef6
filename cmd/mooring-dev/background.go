package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/mooringhq/mooring/internal/localcluster"
)

// up starts "run" detached in its own session and follows its log until the operator
// is ready. If a healthy run already exists it says so and succeeds.
func up(ctx context.Context, cfg config) error {
	if info, ok := readReady(cfg.state); ok {
		if id, alive := running(cfg.state); alive && id.pid == info.Pid && healthy(ctx, info.Readyz) {
			fmt.Printf("mooring-dev: already up (pid %d), operator ready at %s\n", id.pid, info.Readyz)
			fmt.Printf("  export KUBECONFIG=%s\n", shellPath(filepath.Join(cfg.state, "kubeconfig")))
			return nil
		}
	}
	if id, ok := running(cfg.state); ok {
		return fmt.Errorf("a run (pid %d) holds %s but its operator is not ready; see %s or stop it with: mooring-dev down",
			id.pid, cfg.state, filepath.Join(cfg.state, devLog))
	}
	logPath := filepath.Join(cfg.state, devLog)
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return fmt.Errorf("create log dir: %w", err)
	}
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open %s: %w", logPath, err)
	}
	defer func() { _ = logFile.Close() }()
	st, err := logFile.Stat()
	if err != nil {
		return fmt.Errorf("stat %s: %w", logPath, err)
	}
	offset := st.Size()

	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find own executable: %w", err)
	}
	cmd := exec.Command(self, "run", "--detached",
		"--state", cfg.state, "--operator", cfg.operator, "--portal", cfg.portal, "--samples", cfg.samples, "--root", cfg.root,
		"--bin-dir", cfg.binDir, "--nodes", strconv.Itoa(cfg.nodes), "--real-node", cfg.realNode, "--real-nodes", strconv.Itoa(cfg.realNodes),
		"--restart-delay", cfg.restartDelay.String(), "--restart-max-delay", cfg.restartMaxDelay.String())
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// A new session: no controlling terminal, so closing the terminal or Ctrl-C in it
	// does not reach the background run.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start background run: %w", err)
	}
	pid := cmd.Process.Pid
	fmt.Printf("mooring-dev: started in the background (pid %d), log %s\n", pid, logPath)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	follow := &follower{path: logPath, offset: offset, out: os.Stdout}
	deadline := time.NewTimer(cfg.timeout)
	defer deadline.Stop()
	ticker := time.NewTicker(250 * time.Millisecond)
	defer ticker.Stop()
	for {
		follow.copy()
		if info, ok := readReady(cfg.state); ok && info.Pid == pid {
			follow.copy()
			return nil
		}
		select {
		case err := <-exited:
			follow.copy()
			return fmt.Errorf("background run exited (%w) before the operator was ready; log %s", err, logPath)
		case <-deadline.C:
			_ = syscall.Kill(pid, syscall.SIGTERM)
			waitGone(procID{pid: pid}, 2*time.Minute)
			follow.copy()
			return fmt.Errorf("operator not ready after %s; stopped the background run; log %s", cfg.timeout, logPath)
		case <-ticker.C:
		}
	}
}

// down stops the recorded run with SIGTERM and waits until it is gone. The run stops
// the operator and the cluster before it exits.
func down(cfg config) error {
	id, ok := running(cfg.state)
	if !ok {
		_ = os.Remove(filepath.Join(cfg.state, pidFile))
		_ = os.Remove(filepath.Join(cfg.state, readyFile))
		fmt.Println("mooring-dev: nothing running")
		return nil
	}
	t0 := time.Now()
	fmt.Printf("mooring-dev: stopping pid %d\n", id.pid)
	if err := syscall.Kill(id.pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signal pid %d: %w", id.pid, err)
	}
	// The run gives each of six processes up to 20s; normally all stop in seconds.
	if !waitGone(id, 3*time.Minute) {
		// Its children die with it through their parent-death signal.
		_ = syscall.Kill(id.pid, syscall.SIGKILL)
		if !waitGone(id, 10*time.Second) {
			return fmt.Errorf("pid %d survived SIGKILL", id.pid)
		}
		fmt.Printf("mooring-dev: pid %d did not stop in time, killed\n", id.pid)
	}
	fmt.Printf("mooring-dev: stopped (%s)\n", since(t0))
	return nil
}

// clean runs down and deletes the state directory, but only one mooring-dev made:
// a mistyped --state must not delete somebody's files.
func clean(cfg config) error {
	if err := down(cfg); err != nil {
		return err
	}
	entries, err := os.ReadDir(cfg.state)
	if errors.Is(err, os.ErrNotExist) {
		fmt.Printf("mooring-dev: %s does not exist, nothing to clean\n", cfg.state)
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", cfg.state, err)
	}
	if _, err := os.Stat(filepath.Join(cfg.state, markerFile)); err != nil && len(entries) > 0 {
		return fmt.Errorf("%s has no %s file, so mooring-dev did not create it; not deleting it", cfg.state, markerFile)
	}
	// Clean, not RemoveAll: a killed run may have left the real node's mounts in it.
	if err := localcluster.Clean(context.Background(), cfg.state, cfg.binDir); err != nil {
		return fmt.Errorf("remove %s: %w", cfg.state, err)
	}
	fmt.Printf("mooring-dev: removed %s\n", cfg.state)
	return nil
}

// waitGone polls until the process is gone, reporting whether it went in time.
func waitGone(id procID, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for id.alive() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
	return true
}

// healthy reports whether url answers 200 within a second.
func healthy(ctx context.Context, url string) bool {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	defer func() { _ = resp.Body.Close() }()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode == http.StatusOK
}

// follower copies what is appended to a file, like tail -f.
type follower struct {
	path   string
	offset int64
	out    io.Writer
}

func (f *follower) copy() {
	file, err := os.Open(f.path)
	if err != nil {
		return
	}
	defer func() { _ = file.Close() }()
	if _, err := file.Seek(f.offset, io.SeekStart); err != nil {
		return
	}
	n, _ := io.Copy(f.out, file)
	f.offset += n
}
