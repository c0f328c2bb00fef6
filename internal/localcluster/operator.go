package localcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"time"
)

// OperatorOptions configures StartOperator.
type OperatorOptions struct {
	// Binary is the operator executable (bin/mooring).
	Binary string
	// Kubeconfig is passed as --kubeconfig; empty leaves the binary to find its
	// cluster itself (KUBECONFIG, in-cluster config).
	Kubeconfig string
	// LogPath receives the operator's stdout and stderr, appended.
	LogPath string
	// Echo, when set, gets a copy of the output too (foreground mode).
	Echo io.Writer
	// Args are extra flags, e.g. "--leader-elect".
	Args []string
	// Env is added to the parent's environment.
	Env []string
	// ReadyTimeout bounds the wait for /readyz; 0 means 2 minutes.
	ReadyTimeout time.Duration
}

// Operator is a running operator process started by StartOperator.
type Operator struct {
	// HealthAddr and MetricsAddr are the host:port the operator serves probes and
	// metrics on, both on 127.0.0.1 and picked free at start.
	HealthAddr, MetricsAddr string
	// LogPath is the operator's log file.
	LogPath string
	// ReadyIn is how long the operator took from exec to a 200 from /readyz.
	ReadyIn time.Duration

	proc   *process
	exited chan error
}

// StartOperator runs the operator binary with controller-runtime's flags
// (--kubeconfig, --health-probe-bind-address, --metrics-bind-address) on free ports
// and returns once its /readyz answers 200. It fails with the log tail if the process
// exits or is not ready in time. ctx bounds only the start, as in Start.
func StartOperator(ctx context.Context, o OperatorOptions) (*Operator, error) {
	if o.Binary == "" || o.LogPath == "" {
		return nil, errors.New("operator: Binary and LogPath are required")
	}
	if o.ReadyTimeout == 0 {
		o.ReadyTimeout = componentTimeout
	}
	ports, err := freePorts(2)
	if err != nil {
		return nil, fmt.Errorf("operator: %w", err)
	}
	op := &Operator{
		HealthAddr:  "127.0.0.1:" + strconv.Itoa(ports[0]),
		MetricsAddr: "127.0.0.1:" + strconv.Itoa(ports[1]),
		LogPath:     o.LogPath,
		exited:      make(chan error, 1),
	}
	args := []string{"--health-probe-bind-address", op.HealthAddr, "--metrics-bind-address", op.MetricsAddr}
	if o.Kubeconfig != "" {
		args = append([]string{"--kubeconfig", o.Kubeconfig}, args...)
	}
	args = append(args, o.Args...)
	t0 := time.Now()
	op.proc, err = startProcess(processSpec{
		name:    filepath.Base(o.Binary),
		path:    o.Binary,
		args:    args,
		env:     o.Env,
		logPath: o.LogPath,
		echo:    o.Echo,
	})
	if err != nil {
		return nil, fmt.Errorf("operator: %w", err)
	}
	go func() {
		<-op.proc.done
		if !op.proc.stopping.Load() {
			op.exited <- op.proc.exitError()
		}
	}()
	client := &http.Client{}
	if err := waitFor(ctx, op.proc, "operator /readyz", o.ReadyTimeout, httpOK(client, op.ReadyzURL())); err != nil {
		_ = op.Stop()
		return nil, err
	}
	op.ReadyIn = time.Since(t0)
	return op, nil
}

// ReadyzURL is the operator's readiness endpoint.
func (o *Operator) ReadyzURL() string { return "http://" + o.HealthAddr + "/readyz" }

// Pid is the operator's process id.
func (o *Operator) Pid() int { return o.proc.cmd.Process.Pid }

// Exited delivers an error, with the log tail, if the operator exits without Stop.
func (o *Operator) Exited() <-chan error { return o.exited }

// LogTail returns the last n lines the operator wrote since it started.
func (o *Operator) LogTail(n int) string { return o.proc.tail(n) }

// Stop sends SIGTERM, waits up to 20 seconds for a graceful shutdown, then kills the
// operator. It returns once the process is gone and is safe to call more than once.
func (o *Operator) Stop() error {
	_, err := o.proc.stop(stopGrace)
	return err
}
