package instance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestReaperCollectsOrphansOnly: the background child of a shell that has exited (what
// a `kubectl exec` leaves behind) becomes the manager's and is reaped once it exits,
// while the commands the manager runs itself keep their exit status.
func TestReaperCollectsOrphansOnly(t *testing.T) {
	// The test process stands in for PID 1: orphans of its descendants come to it.
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		t.Skipf("cannot become a child subreaper: %v", errno)
	}
	t.Cleanup(func() { _, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 0, 0) })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go reapOrphans(ctx, t.Logf)

	out, err := exec.Command("sh", "-c", "sleep 0.2 & echo $!").Output()
	if err != nil {
		t.Fatal(err)
	}
	orphan, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("orphan pid %q: %v", out, err)
	}

	// Meanwhile the manager's own commands, waited for as they exit, are not taken.
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []string
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 15; j++ {
				var stderr bytes.Buffer
				cmd := exec.Command("sh", "-c", "sleep 0.1; exit 3")
				cmd.Stderr = &stderr
				err := cmd.Run()
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.ExitCode() != 3 {
					mu.Lock()
					failures = append(failures, fmt.Sprintf("worker %d run %d: %v, want exit status 3", i, j, err))
					mu.Unlock()
				}
			}
		}()
	}

	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", orphan))
		if err != nil {
			break // reaped
		}
		if time.Now().After(deadline) {
			t.Fatalf("orphan %d not reaped within 10s: last seen /proc/%d/stat %q", orphan, orphan, b)
		}
		time.Sleep(50 * time.Millisecond)
	}
	wg.Wait()
	if len(failures) > 0 {
		t.Errorf("the reaper took commands of the manager's own:\n%s", strings.Join(failures, "\n"))
	}
}

func TestParseStat(t *testing.T) {
	tests := map[string]struct {
		in    string
		state string
		ppid  int
		start uint64
		ok    bool
	}{
		"plain":                 {in: "42 (sleep) Z 1 42 42 0 -1 4194564 0 0 0 0 0 0 0 0 20 0 1 0 12345 0 0", state: "Z", ppid: 1, start: 12345, ok: true},
		"comm with ) and space": {in: "7 (a) b (c) S 3 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 99 0", state: "S", ppid: 3, start: 99, ok: true},
		"truncated":             {in: "7 (a) S 3", ok: false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			state, ppid, start, ok := parseStat(tc.in)
			if ok != tc.ok || (ok && (state != tc.state || ppid != tc.ppid || start != tc.start)) {
				t.Errorf("parseStat = %q %d %d %v, want %q %d %d %v", state, ppid, start, ok, tc.state, tc.ppid, tc.start, tc.ok)
			}
		})
	}
}

// TestSignalsReachTheServer: a SIGHUP to the manager reaches the running server, and
// one while no server runs does not end the manager.
func TestSignalsReachTheServer(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := &signalForwarder{}
	logged := make(chan string, 4)
	f.start(ctx, func(format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		t.Log(msg)
		logged <- msg
	})

	// No server: the signal is dropped (Go's default would end the test process). It is
	// handled before the server starts, or it would reach the server.
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	select {
	case msg := <-logged:
		if !strings.Contains(msg, "dropped") {
			t.Fatalf("a SIGHUP while no server runs: %q, want it dropped", msg)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a SIGHUP while no server runs was not handled within 10s")
	}
	marker := t.TempDir() + "/hup"
	server := exec.Command("sh", "-c", `trap 'echo hup > "$0"; exit 0' HUP; : > "$0.ready"; while :; do sleep 0.05; done`, marker)
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- server.Wait() }()
	t.Cleanup(func() { _ = server.Process.Kill() })
	f.server.Store(server.Process)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(marker + ".ready"); err == nil {
			break // the trap is set
		} else if time.Now().After(deadline) {
			t.Fatalf("the server shell did not set its trap within 10s: %v", err)
		}
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if b, rerr := os.ReadFile(marker); rerr != nil || strings.TrimSpace(string(b)) != "hup" {
			t.Fatalf("server exited (%v) without having seen SIGHUP: %q %v", err, b, rerr)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the server did not receive the manager's SIGHUP within 10s")
	}
}
