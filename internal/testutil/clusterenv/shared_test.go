package clusterenv

import (
	"strings"
	"testing"
)

// A package sent to a shared cluster that is not there fails saying what to start, rather
// than starting one of its own that the Makefile would not stop.
func TestAttachToNoSharedClusterFails(t *testing.T) {
	dir := t.TempDir()
	if SharedReady(dir) {
		t.Fatalf("an empty directory reads as a ready shared cluster")
	}
	_, err := attach(Options{Name: "x", Shared: true}, dir)
	if err == nil || !strings.Contains(err.Error(), "hack/e2ecluster") {
		t.Fatalf("attach to an empty directory: want an error naming hack/e2ecluster, got %v", err)
	}
}

// An Env on the shared cluster refuses what would disturb the other packages on it.
func TestSharedEnvLeavesTheOperatorAlone(t *testing.T) {
	e := &Env{sharedDir: t.TempDir()}
	if err := e.StopOperator(); err == nil || !strings.Contains(err.Error(), "Options.Shared") {
		t.Fatalf("StopOperator on a shared Env: want an error naming Options.Shared, got %v", err)
	}
	if _, err := e.StartOperatorProcess(t.Context(), "x.log"); err == nil {
		t.Fatalf("StartOperatorProcess on a shared Env: want an error, got none")
	}
	if got := e.stateDirs(); len(got) != 2 || got[1] != e.sharedDir {
		t.Fatalf("stateDirs of a shared Env: want the package's and the shared cluster's, got %v", got)
	}
}
