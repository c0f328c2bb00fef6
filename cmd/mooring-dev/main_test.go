package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestParseStat(t *testing.T) {
	// The command name may hold spaces and parentheses; fields count from the last ')'.
	stat := "4242 (mooring dev (x)) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 8 0 987654 1234 56"
	state, start := parseStat(stat)
	if state != "S" || start != "987654" {
		t.Fatalf("parseStat = %q, %q; want S, 987654", state, start)
	}
}

func TestSelfIsAlive(t *testing.T) {
	me := selfID()
	if !me.alive() {
		t.Fatalf("own process %+v not reported alive", me)
	}
	// Without a start time alive() trusts the PID alone, so the reuse check below would
	// pass whatever alive() did: the tests run on Linux, where /proc gives one.
	if me.start == "" {
		t.Fatalf("no start time for own pid %d (is /proc/%d/stat readable?); the PID-reuse check needs one", me.pid, me.pid)
	}
	if (procID{pid: me.pid, start: "1"}).alive() {
		t.Fatalf("pid %d with a different start time (1, not %s) reported alive; PID reuse would fool down", me.pid, me.start)
	}
}

func TestExternalKubeconfig(t *testing.T) {
	state := t.TempDir()
	other := filepath.Join(t.TempDir(), "config")
	for _, tc := range []struct {
		name, kubeconfig, cluster string
		wantPath                  string
		wantExternal              bool
	}{
		{name: "unset", wantExternal: false},
		{name: "set", kubeconfig: other, wantPath: other, wantExternal: true},
		{name: "forced local", kubeconfig: other, cluster: "local", wantExternal: false},
		{name: "own kubeconfig", kubeconfig: filepath.Join(state, "kubeconfig"), wantExternal: false},
		{name: "list", kubeconfig: other + string(os.PathListSeparator) + other + "2", wantExternal: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("KUBECONFIG", tc.kubeconfig)
			t.Setenv("MOORING_CLUSTER", tc.cluster)
			path, external := externalKubeconfig(state)
			if path != tc.wantPath || external != tc.wantExternal {
				t.Fatalf("externalKubeconfig = %q, %v; want %q, %v", path, external, tc.wantPath, tc.wantExternal)
			}
		})
	}
}

func TestManifestArgs(t *testing.T) {
	dir := t.TempDir()
	if got := manifestArgs(dir); !slices.Equal(got, []string{"-f", dir}) {
		t.Fatalf("plain dir: got %v", got)
	}
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte("resources: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := manifestArgs(dir); !slices.Equal(got, []string{"-k", dir}) {
		t.Fatalf("kustomize dir: got %v", got)
	}
}

func TestShellPath(t *testing.T) {
	if got := shellPath(".mooring/kubeconfig"); got != "$PWD/.mooring/kubeconfig" {
		t.Fatalf("relative: got %q", got)
	}
	if got := shellPath("/abs/kubeconfig"); got != "/abs/kubeconfig" {
		t.Fatalf("absolute: got %q", got)
	}
}
