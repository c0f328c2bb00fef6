package localcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// Backoff is how a Supervisor restarts a component that exits on its own, after the
// kubelet's CrashLoopBackOff: the first restart waits Initial, each failure in a row
// doubles the wait up to Max, and a run that stayed up ResetAfter starts over at Initial.
//
// There is no give-up: in a local cluster a component mostly dies because another one is
// away (a paused kube-apiserver makes the operator and the portal exit, and exit again on
// every start until it answers), and giving up would turn that passing outage into the
// stopped cluster the supervisor exists to avoid. A component that can never start costs
// one attempt per Max, each said on the output with its log tail.
type Backoff struct {
	// Initial is the wait before the first restart. Zero turns restarts off: an
	// unexpected exit is reported on Exited instead, as tests of faults want.
	Initial time.Duration
	// Max caps the wait.
	Max time.Duration
	// ResetAfter is how long a run must last to count as healthy.
	ResetAfter time.Duration
}

// DefaultBackoff is what mooring-dev uses: 1s doubling to 30s, reset after a minute up.
var DefaultBackoff = Backoff{Initial: time.Second, Max: 30 * time.Second, ResetAfter: time.Minute}

// delay is the wait before the restart that follows failures failures in a row.
func (b Backoff) delay(failures int) time.Duration {
	d := b.Initial
	for range failures {
		if d >= b.Max {
			break
		}
		d *= 2
	}
	return min(d, max(b.Max, b.Initial))
}

// Supervisor watches the processes of a local cluster, and of the operator and portal
// run beside it, and restarts one that exits unexpectedly with Backoff, saying so on its
// output. It also restarts one on request (Restart) and reports on all (Status).
// Components register when they start: pass one Supervisor in Options.Supervisor,
// OperatorOptions.Supervisor and PortalOptions.Supervisor to manage them together.
type Supervisor struct {
	backoff Backoff
	out     io.Writer
	exited  chan error

	mu     sync.Mutex
	units  []*unit // in start order
	closed bool    // Shutdown was called
}

// NewSupervisor returns a Supervisor restarting with b (b.Initial zero: never) and
// writing what it does to out (nil: nowhere).
func NewSupervisor(b Backoff, out io.Writer) *Supervisor {
	if out == nil {
		out = io.Discard
	}
	return &Supervisor{backoff: b, out: out, exited: make(chan error, 16)}
}

// Exited delivers an error, naming the component and carrying its log tail, for each
// component that exits unexpectedly while restarts are off.
func (s *Supervisor) Exited() <-chan error { return s.exited }

// Names lists the components in start order.
func (s *Supervisor) Names() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := make([]string, len(s.units))
	for i, u := range s.units {
		names[i] = u.name
	}
	return names
}

// ComponentStatus is what Status reports about one component.
type ComponentStatus struct {
	Name string `json:"name"`
	// State is running, starting, restarting (waiting for NextTry), stopped or exited.
	State string `json:"state"`
	// Pid is the process id of the current or last run.
	Pid int `json:"pid"`
	// Since is when the current or last run started.
	Since time.Time `json:"since"`
	// Restarts counts the runs after the first, automatic and requested.
	Restarts int `json:"restarts"`
	// LastExit is how the last unexpected exit ended, e.g. "signal: killed".
	LastExit string `json:"lastExit,omitempty"`
	// NextTry is when a restarting component is started again.
	NextTry time.Time `json:"nextTry,omitzero"`
	// Log is the component's log file.
	Log string `json:"log"`
}

// Status reports every component in start order.
func (s *Supervisor) Status() []ComponentStatus {
	s.mu.Lock()
	units := slices.Clone(s.units)
	s.mu.Unlock()
	out := make([]ComponentStatus, len(units))
	for i, u := range units {
		out[i] = u.status()
	}
	return out
}

// Restart stops one component (SIGTERM, SIGKILL after the grace period) and starts it
// again with the same flags, ports and data, waiting until it is ready; the others keep
// running. It returns how long the component was down. A component waiting for an
// automatic restart is started at once. An unknown name is an error listing the names.
func (s *Supervisor) Restart(ctx context.Context, name string) (time.Duration, error) {
	u, err := s.unit(name)
	if err != nil {
		return 0, err
	}
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return 0, fmt.Errorf("localcluster: not restarting %s: everything is stopping", name)
	}
	down, err := u.restart(ctx)
	if err == nil {
		s.say("%s restarted on request (pid %d), down for %s", name, u.current().pid(), down.Round(100*time.Millisecond))
	}
	return down, err
}

// Shutdown ends supervision before everything stops: from now on no component is
// restarted or reported on Exited, so one that exits because another went first is part
// of the shutdown. Each still has to be stopped (Cluster.Stop, Operator.Stop, Portal.Stop).
func (s *Supervisor) Shutdown() {
	s.mu.Lock()
	s.closed = true
	units := slices.Clone(s.units)
	s.mu.Unlock()
	for _, u := range units {
		u.hold()
	}
}

// register adds a component; a name may be taken once.
func (s *Supervisor) register(u *unit) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if slices.ContainsFunc(s.units, func(o *unit) bool { return o.name == u.name }) {
		return fmt.Errorf("localcluster: a component named %q is already supervised", u.name)
	}
	u.sup = s
	s.units = append(s.units, u)
	return nil
}

// unit finds a component by name.
func (s *Supervisor) unit(name string) (*unit, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, u := range s.units {
		if u.name == name {
			return u, nil
		}
	}
	names := make([]string, len(s.units))
	for i, u := range s.units {
		names[i] = u.name
	}
	sort.Strings(names)
	return nil, fmt.Errorf("localcluster: no component %q; components: %s", name, strings.Join(names, ", "))
}

// say writes one line about a component to the supervisor's output.
func (s *Supervisor) say(format string, args ...any) {
	fmt.Fprintf(s.out, "localcluster: "+format+"\n", args...)
}

// unit is one supervised component: how to start it, its current process and the
// state of its restarts.
type unit struct {
	sup  *Supervisor
	name string
	spec processSpec
	// ready holds once a run of the component serves; readyTimeout bounds the wait.
	ready        check
	readyTimeout time.Duration
	// prepare, when set, runs before every later start and returns the ready check for
	// that run (kwok frees the node leases its previous run held).
	prepare func(ctx context.Context) (check, error)

	mu       sync.Mutex
	proc     *process
	held     bool // stopped on purpose: no automatic restart until started again
	restarts int
	failures int // unexpected exits in a row, for the backoff
	lastExit string
	nextTry  time.Time
	// wake is closed and replaced by every start or stop on purpose, so an automatic
	// restart in progress gives way to it.
	wake chan struct{}
}

func newUnit(name string, spec processSpec, ready check) *unit {
	spec.name = name
	return &unit{name: name, spec: spec, ready: ready, readyTimeout: componentTimeout, wake: make(chan struct{})}
}

// supersede ends any automatic restart in progress; u.mu is held.
func (u *unit) supersede() {
	close(u.wake)
	u.wake = make(chan struct{})
}

// start starts the component and waits until it is ready. An exit before that is an
// error and leaves the component stopped: starting on purpose (a cluster's start-up,
// Restart) reports failure to its caller rather than entering a crash loop.
func (u *unit) start(ctx context.Context, first bool) (*process, error) {
	if p := u.current(); p != nil && !p.exited() {
		return nil, fmt.Errorf("%s is still running (pid %d)", u.name, p.pid())
	}
	ready := u.ready
	if u.prepare != nil && !first {
		var err error
		if ready, err = u.prepare(ctx); err != nil {
			return nil, fmt.Errorf("prepare %s: %w", u.name, err)
		}
	}
	u.mu.Lock()
	if u.proc != nil && !u.proc.exited() {
		u.mu.Unlock()
		return nil, fmt.Errorf("%s is still running (pid %d)", u.name, u.proc.pid())
	}
	p, err := startProcess(u.spec)
	if err != nil {
		u.held = true
		u.mu.Unlock()
		return nil, err
	}
	u.supersede()
	u.proc, u.held, u.failures, u.nextTry = p, false, 0, time.Time{}
	if !first {
		u.restarts++
	}
	u.mu.Unlock()
	if err := waitFor(ctx, p, u.name, u.readyTimeout, ready); err != nil {
		u.mu.Lock()
		u.held = true
		u.mu.Unlock()
		_, _ = p.stop(stopGrace)
		return p, err
	}
	// Watched only once ready, so an exit during start-up is the caller's to report.
	go u.watch(p)
	return p, nil
}

// stop stops the component and holds it stopped.
func (u *unit) stop() (killed bool, err error) { return u.stopWithin(stopGrace) }

// stopWithin is stop with the time the process gets between SIGTERM and SIGKILL; 0
// kills it at once.
func (u *unit) stopWithin(grace time.Duration) (killed bool, err error) {
	u.mu.Lock()
	u.held = true
	u.nextTry = time.Time{}
	u.supersede()
	p := u.proc
	u.mu.Unlock()
	if p == nil {
		return false, nil
	}
	return p.stop(grace)
}

// hold marks the component stopped without signalling it: a cluster shutting down
// marks all before stopping any, so an exit caused by another's is not a crash.
func (u *unit) hold() {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.held = true
	u.supersede()
	if u.proc != nil {
		u.proc.stopping.Store(true)
	}
}

func (u *unit) restart(ctx context.Context) (time.Duration, error) {
	t0 := time.Now()
	if _, err := u.stop(); err != nil {
		return 0, fmt.Errorf("localcluster: stop %s: %w", u.name, err)
	}
	if _, err := u.start(ctx, false); err != nil {
		return 0, fmt.Errorf("localcluster: start %s again: %w", u.name, err)
	}
	return time.Since(t0), nil
}

// current is the component's process of the current or last run, nil before the first.
func (u *unit) current() *process {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.proc
}

func (u *unit) status() ComponentStatus {
	u.mu.Lock()
	defer u.mu.Unlock()
	st := ComponentStatus{Name: u.name, Restarts: u.restarts, LastExit: u.lastExit, Log: u.spec.logPath}
	if u.proc != nil {
		st.Pid, st.Since = u.proc.pid(), u.proc.started
	}
	switch {
	case u.held:
		st.State = "stopped"
	case !u.nextTry.IsZero():
		st.State, st.NextTry = "restarting", u.nextTry
	case u.proc != nil && u.proc.exited():
		st.State = "exited"
	default:
		st.State = "running"
	}
	return st
}

// watch waits for p to end and, unless it was stopped on purpose, reports it on the
// supervisor's Exited or restarts it with the backoff.
func (u *unit) watch(p *process) {
	<-p.done
	u.mu.Lock()
	if p.stopping.Load() || u.held || u.proc != p {
		u.mu.Unlock()
		return
	}
	u.lastExit = p.status()
	wake := u.wake
	u.mu.Unlock()
	if u.sup.backoff.Initial <= 0 {
		select {
		case u.sup.exited <- p.exitError():
		default: // the first errors suffice to stop a cluster
		}
		return
	}
	u.crashLoop(wake, p)
}

// crashLoop starts the component again after the backoff until a run is ready, or
// until a start or stop on purpose (wake closed) takes over.
func (u *unit) crashLoop(wake chan struct{}, last *process) {
	b := u.sup.backoff
	ran := time.Since(last.started)
	tail := "last lines of " + last.logPath + ":\n" + last.tail(10)
	for {
		u.mu.Lock()
		if ran >= b.ResetAfter {
			u.failures = 0
		}
		delay := b.delay(u.failures)
		u.failures++
		u.nextTry = time.Now().Add(delay)
		attempt := u.failures
		u.mu.Unlock()
		u.sup.say("%s exited unexpectedly (%s) after %s; restarting in %s (at %s, attempt %d); %s",
			u.name, last.status(), ran.Round(100*time.Millisecond), delay, u.nextTry.Format(time.TimeOnly), attempt, tail)

		timer := time.NewTimer(delay)
		select {
		case <-wake:
			timer.Stop()
			return
		case <-timer.C:
		}
		p, err := u.startAgain(wake)
		if errors.Is(err, errSuperseded) {
			return
		}
		if err != nil {
			ran, tail = 0, "could not start: "+err.Error()
			continue
		}
		t0 := time.Now()
		err = waitFor(context.Background(), p, u.name, u.readyTimeout, u.readyCheck(p))
		select {
		case <-wake:
			return // stopped or restarted on purpose meanwhile
		default:
		}
		if err != nil && p.exited() {
			last, ran = p, time.Since(p.started)
			tail = "last lines of " + p.logPath + ":\n" + p.tail(10)
			continue
		}
		if err != nil {
			u.sup.say("%s restarted (pid %d) but not ready, left running: %v", u.name, p.pid(), err)
		} else {
			u.sup.say("%s restarted (pid %d), ready in %s", u.name, p.pid(), since(t0))
		}
		go u.watch(p)
		return
	}
}

// errSuperseded ends an automatic restart that a start or stop on purpose overtook.
var errSuperseded = errors.New("superseded")

// startAgain is the automatic restart's start: prepare, then start unless wake closed.
// The ready check for the run is kept on the process for crashLoop.
func (u *unit) startAgain(wake chan struct{}) (*process, error) {
	ready := u.ready
	if u.prepare != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		var err error
		ready, err = u.prepare(ctx)
		cancel()
		if err != nil {
			return nil, err
		}
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	select {
	case <-wake:
		return nil, errSuperseded
	default:
	}
	p, err := startProcess(u.spec)
	if err != nil {
		return nil, err
	}
	p.ready = ready
	u.proc, u.nextTry = p, time.Time{}
	u.restarts++
	return p, nil
}

// readyCheck is the ready check of p's run.
func (u *unit) readyCheck(p *process) check {
	if p.ready != nil {
		return p.ready
	}
	return u.ready
}
