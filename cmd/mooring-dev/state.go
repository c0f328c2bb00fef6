package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Files mooring-dev keeps in the state directory, next to the cluster's own.
const (
	pidFile    = "dev.pid"      // "<pid> <start time>" of the running "run"
	readyFile  = "dev.ready"    // readyInfo, written once the operator is ready
	markerFile = ".mooring-dev" // proves to "clean" that the directory is ours
	devLog     = "logs/dev.log" // output of the background "run"
)

// readyInfo is what a ready "run" records for "up" to check its health later.
type readyInfo struct {
	Pid        int    `json:"pid"`
	Readyz     string `json:"readyz"`
	Kubeconfig string `json:"kubeconfig"`
}

// procID identifies a process across PID reuse: the pid plus its start time from
// /proc (empty where there is no /proc, which then trusts the pid alone).
type procID struct {
	pid   int
	start string
}

func selfID() procID {
	return procID{pid: os.Getpid(), start: procStart(os.Getpid())}
}

// alive reports whether the process still runs and is the one recorded.
func (p procID) alive() bool {
	if p.pid <= 0 {
		return false
	}
	if err := syscall.Kill(p.pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.pid))
	if err != nil {
		return p.start == "" // no /proc: trust kill -0
	}
	state, start := parseStat(string(stat))
	if state == "Z" { // exited, not yet reaped by its new parent
		return false
	}
	return p.start == "" || p.start == start
}

// procStart returns the start time (in clock ticks since boot) of pid, or "".
func procStart(pid int) string {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	_, start := parseStat(string(stat))
	return start
}

// parseStat returns the state (field 3) and start time (field 22) of a
// /proc/<pid>/stat line; the command name (field 2) may contain spaces, so fields are
// counted from its closing parenthesis.
func parseStat(stat string) (state, start string) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return "", ""
	}
	f := strings.Fields(stat[i+1:])
	if len(f) < 20 {
		return "", ""
	}
	return f[0], f[19]
}

func writePid(state string, id procID) error {
	data := fmt.Sprintf("%d %s\n", id.pid, id.start)
	if err := os.WriteFile(filepath.Join(state, pidFile), []byte(data), 0o644); err != nil {
		return fmt.Errorf("write pid file: %w", err)
	}
	return nil
}

// readPid returns the recorded "run" process; ok is false when there is none.
func readPid(state string) (procID, bool) {
	data, err := os.ReadFile(filepath.Join(state, pidFile))
	if err != nil {
		return procID{}, false
	}
	f := strings.Fields(string(data))
	if len(f) == 0 {
		return procID{}, false
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil {
		return procID{}, false
	}
	id := procID{pid: pid}
	if len(f) > 1 {
		id.start = f[1]
	}
	return id, true
}

// running returns the recorded "run" process if it is still alive.
func running(state string) (procID, bool) {
	id, ok := readPid(state)
	if !ok || !id.alive() {
		return procID{}, false
	}
	return id, true
}

// removeOwn deletes the pid and ready files if they still belong to id, so a run that
// exits does not remove the files of a newer one.
func removeOwn(state string, id procID) {
	if cur, ok := readPid(state); ok && cur.pid == id.pid {
		_ = os.Remove(filepath.Join(state, pidFile))
	}
	if info, ok := readReady(state); ok && info.Pid == id.pid {
		_ = os.Remove(filepath.Join(state, readyFile))
	}
}

func writeReady(state string, info readyInfo) error {
	data, err := json.Marshal(info)
	if err != nil {
		return err
	}
	tmp := filepath.Join(state, readyFile+".tmp")
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("write ready file: %w", err)
	}
	// Rename so "up" never reads a half-written file.
	return os.Rename(tmp, filepath.Join(state, readyFile))
}

func readReady(state string) (readyInfo, bool) {
	var info readyInfo
	data, err := os.ReadFile(filepath.Join(state, readyFile))
	if err != nil || json.Unmarshal(data, &info) != nil {
		return readyInfo{}, false
	}
	return info, true
}
