package localcluster

import "syscall"

// childSysProcAttr puts the child in its own process group and has the kernel kill it
// when the parent dies. Pdeathsig fires when the thread that forked the child exits;
// the Go runtime only ends threads of goroutines that exit while locked to them, and
// children are never started from such goroutines here.
func childSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
