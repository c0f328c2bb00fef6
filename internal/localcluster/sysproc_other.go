//go:build unix && !linux

package localcluster

import "syscall"

// childSysProcAttr puts the child in its own process group. Only Linux has a
// parent-death signal; elsewhere a parent killed with SIGKILL leaves children behind.
func childSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
