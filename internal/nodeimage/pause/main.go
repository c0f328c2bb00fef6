// Command pause is the sandbox ("pause") container of the local cluster's real node: it
// holds a pod's namespaces open, doing nothing, until the runtime stops it with SIGTERM
// or SIGINT. As PID 1 of a pod that shares its process namespace it also reaps the
// zombies that orphaned processes leave behind, as Kubernetes' own pause does.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for sig := range signals {
		if sig != syscall.SIGCHLD {
			return
		}
		// One SIGCHLD may stand for several exits: reap until none is left.
		for {
			pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
