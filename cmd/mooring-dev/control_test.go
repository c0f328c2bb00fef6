package main

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mooringhq/mooring/internal/localcluster"
)

// fakeSupervisor records restarts and reports fixed components.
type fakeSupervisor struct {
	mu        sync.Mutex
	restarted []string
	now       time.Time
}

func (f *fakeSupervisor) Names() []string { return []string{"etcd", "operator"} }

func (f *fakeSupervisor) Status() []localcluster.ComponentStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	return []localcluster.ComponentStatus{
		{Name: "etcd", State: "running", Pid: 101, Since: f.now.Add(-time.Minute), Log: "/s/logs/etcd.log"},
		{Name: "operator", State: "restarting", Pid: 202, Restarts: 3 + len(f.restarted), LastExit: "exit status 1",
			NextTry: f.now.Add(4 * time.Second), Log: "/s/logs/mooring.log"},
	}
}

func (f *fakeSupervisor) Restart(_ context.Context, name string) (time.Duration, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.restarted = append(f.restarted, name)
	return 1200 * time.Millisecond, nil
}

// TestControlSocket drives "restart" and "status" against a run's control socket: a
// restart reaches the supervisor and says so, an unknown name lists the valid ones and
// restarts nothing, the status shows every component.
func TestControlSocket(t *testing.T) {
	state := t.TempDir()
	cfg := config{state: state}
	if err := restartComponent(t.Context(), cfg, "operator", &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "nothing running") {
		t.Fatalf("restart without a run: %v; want nothing running", err)
	}
	if err := writePid(state, selfID()); err != nil {
		t.Fatal(err)
	}
	sup := &fakeSupervisor{now: time.Now()}
	stop, err := serveControl(t.Context(), state, sup, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)

	var out bytes.Buffer
	if err := restartComponent(t.Context(), cfg, "operator", &out); err != nil {
		t.Fatalf("restart operator: %v", err)
	}
	if want := "operator restarted, ready again after 1.2s (pid 202)"; !strings.Contains(out.String(), want) {
		t.Errorf("restart output %q lacks %q", out.String(), want)
	}
	if !strings.HasPrefix(out.String(), "mooring-dev: restarting operator\n") {
		t.Errorf("restart output %q does not begin by saying what it restarts", out.String())
	}
	out.Reset()
	err = restartComponent(t.Context(), cfg, "kube-apiservre", &out)
	if err == nil || err.Error() != `no component "kube-apiservre"; components: etcd, operator` {
		t.Errorf("restart of an unknown name: %v; want the valid names", err)
	}
	if out.Len() > 0 {
		t.Errorf("restart of an unknown name printed %q; want only the error", out.String())
	}
	if !slices.Equal(sup.restarted, []string{"operator"}) {
		t.Errorf("supervisor restarted %v; want [operator] only", sup.restarted)
	}

	out.Reset()
	if err := showStatus(t.Context(), cfg, &out); err != nil {
		t.Fatalf("status: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("status has %d lines, want a header and 2 components:\n%s", len(lines), out.String())
	}
	for i, want := range [][]string{
		{"COMPONENT", "STATE", "PID", "RESTARTS", "LAST EXIT"},
		{"etcd", "running", "101", " 0 ", "1m0s", "/s/logs/etcd.log"},
		{"operator", "restarting in ", "202", " 4 ", "exit status 1", "/s/logs/mooring.log"},
	} {
		for _, w := range want {
			if !strings.Contains(lines[i], w) {
				t.Errorf("status line %d %q lacks %q", i, lines[i], w)
			}
		}
	}
	t.Log("\n" + out.String())
}
