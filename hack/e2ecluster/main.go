// Command e2ecluster runs the one local cluster (kwok nodes, Mooring's CRDs and webhooks,
// the operator; no portal) that the end-to-end packages which leave it as they found it
// share during `make test` and `make test-e2e` (clusterenv.Options.Shared). The Makefile
// starts it before go test and stops it after, also when a test failed, and hands its
// state directory to the tests in MOORING_E2E_CLUSTER.
//
//	e2ecluster start DIR   start it in the background; return once it is ready
//	e2ecluster stop DIR    stop it; fine when nothing runs
//	e2ecluster run DIR     run it in the foreground until SIGINT or SIGTERM
//
// The operator is MOORING_OPERATOR_BIN when set (make build's), else built from the
// checkout. The state and every log stay in DIR (cluster/logs/, mooring.log, e2ecluster.log).
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mooringhq/mooring/internal/testutil/clusterenv"
)

// readyTimeout bounds a start: a cold cluster on a busy 2-core machine takes about a
// minute.
const readyTimeout = 5 * time.Minute

// stopTimeout is how long a stop waits for the cluster to go before killing it.
const stopTimeout = time.Minute

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: e2ecluster start|stop|run DIR")
		os.Exit(2)
	}
	dir, err := filepath.Abs(os.Args[2])
	if err == nil {
		switch os.Args[1] {
		case "start":
			err = start(dir)
		case "stop":
			err = stop(dir)
		case "run":
			ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer cancel()
			err = clusterenv.Serve(ctx, dir)
		default:
			err = fmt.Errorf("unknown command %q: want start, stop or run", os.Args[1])
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2ecluster:", err)
		os.Exit(1)
	}
}

// pidFile holds the pid of the background "run".
func pidFile(dir string) string { return dir + ".pid" }

// start runs "run" in the background, in a session of its own so that a Ctrl-C of make
// reaches it only through stop, logging beside its state, and waits until it is ready or
// has exited.
func start(dir string) error {
	if err := stop(dir); err != nil {
		return fmt.Errorf("stop the previous shared cluster: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	logPath := dir + ".log"
	log, err := os.Create(logPath)
	if err != nil {
		return err
	}
	// The child holds its own descriptor of the log; this one is only for starting it.
	defer func() { _ = log.Close() }()
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(self, "run", dir)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	if err := os.WriteFile(pidFile(dir), []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644); err != nil {
		_ = cmd.Process.Kill()
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	began := time.Now()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-exited:
			_ = os.Remove(pidFile(dir))
			if err == nil {
				err = errors.New("exit status 0")
			}
			return fmt.Errorf("the shared cluster exited before it was ready (%w); its log, %s:\n%s", err, logPath, tail(logPath, 30))
		case <-tick.C:
		}
		if clusterenv.SharedReady(dir) {
			fmt.Printf("e2ecluster: shared cluster ready in %s (%s, log %s)\n", time.Since(began).Round(100*time.Millisecond), dir, logPath)
			return nil
		}
		if time.Since(began) > readyTimeout {
			_ = stop(dir)
			return fmt.Errorf("the shared cluster was not ready after %s; its log, %s:\n%s", readyTimeout, logPath, tail(logPath, 30))
		}
	}
}

// stop sends SIGTERM to the background "run" and waits for it to stop what it started,
// then kills its session if it is still there.
func stop(dir string) error {
	data, err := os.ReadFile(pidFile(dir))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return fmt.Errorf("%s: %w", pidFile(dir), err)
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err == nil {
		deadline := time.Now().Add(stopTimeout)
		for alive(pid) && time.Now().Before(deadline) {
			time.Sleep(200 * time.Millisecond) // polling a process that is not our child
		}
		if alive(pid) {
			fmt.Fprintf(os.Stderr, "e2ecluster: pid %d still runs after %s: killing its session\n", pid, stopTimeout)
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		} else {
			fmt.Printf("e2ecluster: shared cluster stopped (state and logs in %s)\n", dir)
		}
	}
	return os.Remove(pidFile(dir))
}

// alive reports whether pid still runs (a zombie counts as gone).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// The state follows the command name in parentheses.
	if i := strings.LastIndexByte(string(stat), ')'); i >= 0 && i+2 < len(stat) {
		return stat[i+2] != 'Z'
	}
	return true
}

// tail is the last n lines of the file at path.
func tail(path string, n int) string {
	data, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
