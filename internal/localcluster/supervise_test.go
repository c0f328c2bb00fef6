package localcluster

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestBackoffDelay(t *testing.T) {
	b := Backoff{Initial: time.Second, Max: 30 * time.Second}
	tests := map[int]time.Duration{0: time.Second, 1: 2 * time.Second, 2: 4 * time.Second, 4: 16 * time.Second, 5: 30 * time.Second, 50: 30 * time.Second}
	for failures, want := range tests {
		if got := b.delay(failures); got != want {
			t.Errorf("delay after %d failures = %s, want %s", failures, got, want)
		}
	}
}

// testBackoff is short, so a test sees several restarts in a second or two.
var testBackoff = Backoff{Initial: 100 * time.Millisecond, Max: 400 * time.Millisecond, ResetAfter: time.Second}

// TestSupervisorRestartsOperator runs a stand-in operator (this test binary) under a
// Supervisor: killed, it comes back on the same /readyz; failing at every start, it is
// tried again after waits that double up to the maximum; a Restart replaces it at once;
// Stop ends it for good.
func TestSupervisorRestartsOperator(t *testing.T) {
	dir := t.TempDir()
	failFile, startsFile := filepath.Join(dir, "fail"), filepath.Join(dir, "starts")
	out := &syncBuffer{}
	sup := NewSupervisor(testBackoff, out)
	op, err := StartOperator(t.Context(), OperatorOptions{
		Binary: os.Args[0], LogPath: filepath.Join(dir, "mooring.log"), Supervisor: sup,
		Env: []string{fakeOperatorEnv + "=serve", fakeFailFileEnv + "=" + failFile, fakeStartsFileEnv + "=" + startsFile},
	})
	if err != nil {
		t.Fatalf("StartOperator: %v", err)
	}
	t.Cleanup(func() { _ = op.Stop() })

	t.Run("killed, it comes back", func(t *testing.T) {
		pid := op.Pid()
		sendSignal(t, pid, syscall.SIGKILL)
		newPid := waitBack(t, op, pid)
		st := statusOf(t, sup, OperatorComponent)
		if st.Restarts != 1 || st.LastExit != "signal: killed" || st.State != "running" {
			t.Errorf("status after one kill = %+v; want 1 restart, last exit signal: killed, running", st)
		}
		// The supervisor says so once its own readiness check passed, maybe after ours.
		restarted := fmt.Sprintf("operator restarted (pid %d), ready", newPid)
		eventually(t, 10*time.Second, "the supervisor to say "+restarted, func() (bool, string) {
			return strings.Contains(out.String(), restarted), out.String()
		})
		for _, want := range []string{"operator exited unexpectedly (signal: killed)", "restarting in 100ms", "fake operator: kubeconfig="} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("supervisor output lacks %q:\n%s", want, out)
			}
		}
	})

	t.Run("failing at every start, the wait doubles", func(t *testing.T) {
		// A run that lasted ResetAfter was healthy: the waits start over at Initial.
		eventually(t, 10*time.Second, "the operator up for "+testBackoff.ResetAfter.String(), func() (bool, string) {
			st := statusOf(t, sup, OperatorComponent)
			return time.Since(st.Since) > testBackoff.ResetAfter, "up since " + st.Since.Format(time.StampMilli)
		})
		touch(t, failFile)
		before := len(readStarts(t, startsFile))
		pid := op.Pid()
		sendSignal(t, pid, syscall.SIGKILL)
		// Five failed starts: waits of 100, 200, 400 and 400ms between them.
		var starts []time.Time
		eventually(t, 10*time.Second, "5 starts after the kill", func() (bool, string) {
			starts = readStarts(t, startsFile)[before:]
			return len(starts) >= 5, fmt.Sprintf("%d starts", len(starts))
		})
		announced := regexp.MustCompile(`restarting in (\S+) `).FindAllStringSubmatch(out.String(), -1)
		var waits []string
		for _, m := range announced[1:] { // the first is the kill of the previous subtest
			waits = append(waits, m[1])
		}
		if got, want := strings.Join(waits, " "), "100ms 200ms 400ms 400ms 400ms"; !strings.HasPrefix(got, want) {
			t.Errorf("announced waits %q, want them to begin %q", got, want)
		}
		// The waits happened: each start came at least the announced wait after the
		// previous one (a failed start takes some time itself, so only a lower bound).
		for i, want := range []time.Duration{200 * time.Millisecond, 400 * time.Millisecond, 400 * time.Millisecond, 400 * time.Millisecond} {
			if gap := starts[i+1].Sub(starts[i]); gap < want {
				t.Errorf("start %d came %s after start %d; want at least %s", i+1, gap, i, want)
			}
		}
		if st := statusOf(t, sup, OperatorComponent); st.State != "restarting" || st.NextTry.IsZero() {
			t.Errorf("status while failing = %+v; want restarting with a next try", st)
		}
		if err := os.Remove(failFile); err != nil {
			t.Fatal(err)
		}
		waitBack(t, op, pid)
	})

	t.Run("restart on request", func(t *testing.T) {
		pid := op.Pid()
		down, err := sup.Restart(t.Context(), OperatorComponent)
		if err != nil {
			t.Fatalf("Restart: %v", err)
		}
		if op.Pid() == pid || !alive(op.Pid()) || alive(pid) {
			t.Fatalf("after Restart pid %d (alive %v), before %d (alive %v); want a new live process", op.Pid(), alive(op.Pid()), pid, alive(pid))
		}
		t.Logf("restarted in %s", down)
		if said := fmt.Sprintf("operator restarted on request (pid %d)", op.Pid()); !strings.Contains(out.String(), said) {
			t.Errorf("supervisor output lacks %q:\n%s", said, out)
		}
		_, err = sup.Restart(t.Context(), "operater")
		if err == nil || !strings.Contains(err.Error(), `no component "operater"; components: operator`) {
			t.Fatalf("Restart of an unknown name: %v; want the list of names", err)
		}
	})

	t.Run("stopped, it stays stopped", func(t *testing.T) {
		pid := op.Pid()
		before := len(readStarts(t, startsFile))
		if err := op.Stop(); err != nil {
			t.Fatal(err)
		}
		if alive(pid) {
			t.Fatalf("pid %d alive after Stop", pid)
		}
		// Ten initial waits pass without a start.
		consistently(t, 10*testBackoff.Initial, "no start after Stop", func() (bool, string) {
			n := len(readStarts(t, startsFile)) - before
			return n == 0, fmt.Sprintf("%d starts", n)
		})
		if st := statusOf(t, sup, OperatorComponent); st.State != "stopped" {
			t.Errorf("status after Stop = %+v; want stopped", st)
		}
		sup.Shutdown()
		if _, err := sup.Restart(t.Context(), OperatorComponent); err == nil || !strings.Contains(err.Error(), "everything is stopping") {
			t.Errorf("Restart after Shutdown: %v; want a refusal", err)
		}
	})
}

// TestSupervisorStartupExitFails checks a component that exits during its start-up
// still fails the start, as without a supervisor, and is not restarted.
func TestSupervisorStartupExitFails(t *testing.T) {
	dir := t.TempDir()
	startsFile := filepath.Join(dir, "starts")
	sup := NewSupervisor(testBackoff, nil)
	_, err := StartOperator(t.Context(), OperatorOptions{
		Binary: os.Args[0], LogPath: filepath.Join(dir, "mooring.log"), Supervisor: sup,
		Env: []string{fakeOperatorEnv + "=fail", fakeStartsFileEnv + "=" + startsFile},
	})
	if err == nil || !strings.Contains(err.Error(), "exit status 3") {
		t.Fatalf("StartOperator of an operator that exits at once: %v; want its exit status", err)
	}
	consistently(t, 10*testBackoff.Initial, "one start only", func() (bool, string) {
		n := len(readStarts(t, startsFile))
		return n == 1, fmt.Sprintf("%d starts", n)
	})
	if st := statusOf(t, sup, OperatorComponent); st.State != "stopped" {
		t.Errorf("status = %+v; want stopped", st)
	}
}

// waitBack waits until the operator runs as a process other than pid and is ready.
func waitBack(t *testing.T, op *Operator, pid int) int {
	t.Helper()
	took := eventually(t, 30*time.Second, fmt.Sprintf("operator back as a pid other than %d, /readyz 200", pid), func() (bool, string) {
		now := op.Pid()
		if now == pid {
			return false, "same pid"
		}
		resp, err := http.Get(op.ReadyzURL())
		if err != nil {
			return false, fmt.Sprintf("pid %d: %v", now, err)
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, fmt.Sprintf("pid %d: %s", now, resp.Status)
	})
	t.Logf("operator back in %s", took.Round(10*time.Millisecond))
	return op.Pid()
}

func statusOf(t *testing.T, sup *Supervisor, name string) ComponentStatus {
	t.Helper()
	for _, st := range sup.Status() {
		if st.Name == name {
			return st
		}
	}
	t.Fatalf("no component %q in status %+v", name, sup.Status())
	return ComponentStatus{}
}

func sendSignal(t *testing.T, pid int, sig syscall.Signal) {
	t.Helper()
	if err := syscall.Kill(pid, sig); err != nil {
		t.Fatalf("kill -%d %d: %v", sig, pid, err)
	}
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(stat, ')')
	return i > 0 && i+2 < len(stat) && stat[i+2] != 'Z'
}

func touch(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// readStarts returns the start times the fake operator recorded.
func readStarts(t *testing.T, path string) []time.Time {
	t.Helper()
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var starts []time.Time
	for _, line := range strings.Fields(string(data)) {
		ns, err := strconv.ParseInt(line, 10, 64)
		if err != nil {
			t.Fatalf("starts file line %q: %v", line, err)
		}
		starts = append(starts, time.Unix(0, ns))
	}
	return starts
}

// consistently polls check for d and fails the test the first time it does not hold.
func consistently(t *testing.T, d time.Duration, want string, check func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if ok, seen := check(); !ok {
			t.Fatalf("expected %s throughout %s; saw %s", want, d, seen)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// syncBuffer is a bytes.Buffer safe for the supervisor's goroutines and the test.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
