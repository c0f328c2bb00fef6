package instance

import (
	"context"
	"errors"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"testing"
)

// fakeEngine records what the manager asks of it; its data directory is missing until
// Initialise runs.
type fakeEngine struct {
	initialised bool
	initialise  int
	observes    atomic.Int32
}

func (f *fakeEngine) Check(context.Context) error { return nil }
func (f *fakeEngine) Initialised() bool           { return f.initialised }
func (f *fakeEngine) Initialise(context.Context) error {
	f.initialise++
	f.initialised = true
	return nil
}
func (f *fakeEngine) Configure(context.Context) error  { return nil }
func (f *fakeEngine) Server() *exec.Cmd                { return exec.Command("true") }
func (f *fakeEngine) StopSignal() os.Signal            { return os.Interrupt }
func (f *fakeEngine) Ready(context.Context) error      { return nil }
func (f *fakeEngine) AfterStart(context.Context) error { return nil }
func (f *fakeEngine) Refresh(context.Context) error    { return nil }
func (f *fakeEngine) Observe(context.Context) (Observation, error) {
	f.observes.Add(1)
	return Observation{Role: RolePrimary}, nil
}

// TestEmptyVolumeInClusterWithData: an empty volume initialises only in a cluster
// without data; in one with data the primary refuses (PrimaryDataLost) and a replica
// clones, saying so.
func TestEmptyVolumeInClusterWithData(t *testing.T) {
	tests := map[string]struct {
		index       int
		marker      string // the ConfigMap's "initialized" file; "" for none
		wantFault   string
		wantInit    int
		wantCloning bool
	}{
		"new cluster, primary initialises":              {index: 0, wantInit: 1},
		"new cluster, replica clones":                   {index: 1, wantInit: 1},
		"marker not true, primary initialises":          {index: 0, marker: "false", wantInit: 1},
		"cluster with data, primary waits":              {index: 0, marker: "true", wantFault: FaultPrimaryDataLost},
		"cluster with data, replica clones and says so": {index: 1, marker: "true\n", wantInit: 1, wantCloning: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			state := t.TempDir()
			if tc.marker != "" {
				if err := os.WriteFile(filepath.Join(state, ClusterInitializedKey), []byte(tc.marker), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			e := &fakeEngine{}
			m := &manager{
				cfg:    Config{Engine: "postgresql", Pod: "db-x", Index: tc.index, PrimaryHost: "db-0.db-headless", DataDir: t.TempDir(), ClusterStateDir: state},
				engine: e, log: log.New(io.Discard, "", 0),
			}
			err := m.prepare(context.Background())
			var f *Fault
			switch {
			case tc.wantFault == "" && err != nil:
				t.Fatalf("prepare: %v, want no error", err)
			case tc.wantFault != "" && (!errors.As(err, &f) || f.Reason != tc.wantFault):
				t.Fatalf("prepare: %v, want fault %s", err, tc.wantFault)
			}
			if e.initialise != tc.wantInit {
				t.Errorf("Initialise ran %d times, want %d", e.initialise, tc.wantInit)
			}
			if got := m.st.get().Cloning; got != tc.wantCloning {
				t.Errorf("status cloning %v, want %v", got, tc.wantCloning)
			}
		})
	}
}
