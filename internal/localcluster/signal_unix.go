//go:build unix

package localcluster

import (
	"os"
	"syscall"
)

const (
	terminate = syscall.SIGTERM
	kill      = syscall.SIGKILL
)

// signalGroup signals the child's whole process group, so helpers it may have started
// stop with it.
func signalGroup(p *os.Process, sig syscall.Signal) {
	if err := syscall.Kill(-p.Pid, sig); err != nil {
		_ = p.Signal(sig)
	}
}
