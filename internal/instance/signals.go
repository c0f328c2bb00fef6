package instance

import (
	"context"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
)

// forwardedSignals reach the server as they reach the manager: SIGHUP makes PostgreSQL
// and MariaDB reload their configuration, SIGUSR1 makes PostgreSQL reopen its log and
// MariaDB flush its logs, SIGUSR2 is passed for completeness. SIGTERM and SIGINT are not
// forwarded: they stop the manager, which then stops the server with the engine's own
// fast shutdown (StopSignal) and waits for it.
var forwardedSignals = []os.Signal{syscall.SIGHUP, syscall.SIGUSR1, syscall.SIGUSR2}

// signalForwarder passes forwardedSignals to the running server. It listens for the
// manager's whole life, so that a SIGHUP while no server runs is dropped rather than
// ending the manager (Go's default for an unhandled SIGHUP).
type signalForwarder struct {
	server atomic.Pointer[os.Process]
}

// start takes the signals from now on and forwards them until ctx ends.
func (f *signalForwarder) start(ctx context.Context, logf func(string, ...any)) {
	ch := make(chan os.Signal, 4)
	signal.Notify(ch, forwardedSignals...)
	go f.forward(ctx, ch, logf)
}

func (f *signalForwarder) forward(ctx context.Context, ch chan os.Signal, logf func(string, ...any)) {
	defer signal.Stop(ch)
	for {
		select {
		case <-ctx.Done():
			return
		case sig := <-ch:
			p := f.server.Load()
			if p == nil {
				logf("%v received while no server runs: dropped", sig)
				continue
			}
			if err := p.Signal(sig); err != nil {
				logf("forwarding %v to the server: %v", sig, err)
			}
		}
	}
}
