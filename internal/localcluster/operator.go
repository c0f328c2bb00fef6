package localcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
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
	// Supervisor, when set, watches the operator as component "operator" and restarts
	// it per its Backoff; without one an unexpected exit is reported on Exited.
	Supervisor *Supervisor
}

// OperatorComponent is the operator's name in a Supervisor.
const OperatorComponent = "operator"

// Operator is a running operator process started by StartOperator.
type Operator struct {
	// HealthAddr and MetricsAddr are the host:port the operator serves probes and
	// metrics on, both on 127.0.0.1 and picked free at start.
	HealthAddr, MetricsAddr string
	// LogPath is the operator's log file.
	LogPath string
	// ReadyIn is how long the operator took from exec to a 200 from /readyz.
	ReadyIn time.Duration

	unit *unit
	sup  *Supervisor
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
		sup:         o.Supervisor,
	}
	if op.sup == nil {
		op.sup = NewSupervisor(Backoff{}, nil)
	}
	args := []string{"--health-probe-bind-address", op.HealthAddr, "--metrics-bind-address", op.MetricsAddr}
	if o.Kubeconfig != "" {
		args = append([]string{"--kubeconfig", o.Kubeconfig}, args...)
	}
	args = append(args, o.Args...)
	client := &http.Client{}
	op.unit = newUnit(OperatorComponent, processSpec{path: o.Binary, args: args, env: o.Env, logPath: o.LogPath, echo: o.Echo},
		httpOK(client, op.ReadyzURL()))
	if err := op.sup.register(op.unit); err != nil {
		return nil, fmt.Errorf("operator: %w", err)
	}
	op.unit.readyTimeout = o.ReadyTimeout
	t0 := time.Now()
	if _, err := op.unit.start(ctx, true); err != nil {
		return nil, err
	}
	op.ReadyIn = time.Since(t0)
	return op, nil
}

// ReadyzURL is the operator's readiness endpoint.
func (o *Operator) ReadyzURL() string { return "http://" + o.HealthAddr + "/readyz" }

// Pid is the process id of the operator's current run.
func (o *Operator) Pid() int { return o.unit.current().pid() }

// Exited delivers an error, with the log tail, if the operator exits without Stop while
// its Supervisor does not restart it. It is the Supervisor's Exited.
func (o *Operator) Exited() <-chan error { return o.sup.Exited() }

// LogTail returns the last n lines the operator's current run wrote.
func (o *Operator) LogTail(n int) string { return o.unit.current().tail(n) }

// Stop sends SIGTERM, waits up to 20 seconds for a graceful shutdown, then kills the
// operator. It returns once the process is gone and is safe to call more than once.
func (o *Operator) Stop() error {
	_, err := o.unit.stop()
	return err
}
