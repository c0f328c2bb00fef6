package instance

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The manager is the container's PID 1: every process whose parent exits before it (the
// background job of a `kubectl exec` shell, a server's helper) becomes its child, and
// stays a zombie unless it waits for it. Outside a pod the manager makes itself a child
// subreaper (PR_SET_CHILD_SUBREAPER), so that its descendants' orphans come to it the
// same way (and a test can see them reaped).
//
// A blanket wait4(-1) would also collect the children the manager started itself (the
// server, psql, pg_basebackup), whose exec.Cmd.Wait would then fail with ECHILD. So the
// reaper collects only zombies that have stayed zombies for a whole reapInterval: each of
// the manager's own children is waited for by its own goroutine as soon as it exits.

// reapInterval is how often the reaper looks for zombie children; an orphan is reaped
// between one and two intervals after it exits.
const reapInterval = time.Second

const prSetChildSubreaper = 36 // PR_SET_CHILD_SUBREAPER, linux/prctl.h

// reapOrphans reaps zombie children until ctx ends.
func reapOrphans(ctx context.Context, logf func(string, ...any)) {
	if os.Getpid() != 1 {
		if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
			logf("cannot become a child subreaper (%v): orphans of the server's helpers go to the host's init", errno)
		}
	}
	self := os.Getpid()
	seen := map[int]uint64{} // zombie pid → its start time, as seen at the last pass
	t := time.NewTicker(reapInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := zombieChildren(self)
		for pid, start := range now {
			if prev, ok := seen[pid]; !ok || prev != start {
				continue // a zombie for less than an interval: maybe one of ours, about to be waited for
			}
			var ws syscall.WaitStatus
			if got, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil); err == nil && got == pid {
				delete(now, pid)
			}
		}
		seen = now
	}
}

// zombieChildren are the zombie processes whose parent is ppid, with their start times
// (a pid is reused only once its zombie is gone, so pid and start time name one process).
func zombieChildren(ppid int) map[int]uint64 {
	out := map[int]uint64{}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "stat"))
		if err != nil {
			continue
		}
		state, parent, start, ok := parseStat(string(b))
		if !ok || state != "Z" || parent != ppid {
			continue
		}
		pid, err := strconv.Atoi(filepath.Base(d))
		if err == nil {
			out[pid] = start
		}
	}
	return out
}

// parseStat reads the state, parent pid and start time of /proc/<pid>/stat: "pid (comm)
// state ppid ... starttime ...", where comm may hold spaces and parentheses.
func parseStat(stat string) (state string, ppid int, start uint64, ok bool) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return "", 0, 0, false
	}
	f := strings.Fields(stat[i+1:])
	// After comm: state(0) ppid(1) ... starttime(19).
	if len(f) < 20 {
		return "", 0, 0, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	start, err2 := strconv.ParseUint(f[19], 10, 64)
	return f[0], ppid, start, err1 == nil && err2 == nil
}
