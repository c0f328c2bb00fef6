//go:build !unix

package localcluster

import (
	"os"
	"syscall"
)

const (
	terminate = syscall.Signal(15)
	kill      = syscall.Signal(9)
)

// childSysProcAttr has nothing to set where there are no process groups.
func childSysProcAttr() *syscall.SysProcAttr { return nil }

// signalGroup kills the child: without Unix signals there is no graceful stop.
func signalGroup(p *os.Process, _ syscall.Signal) { _ = p.Kill() }
