package instance

import (
	"context"
	"fmt"
	"os"
	"os/exec"
)

// Engine is one database server as the manager drives it. The manager calls Check,
// then Initialise when Initialised is false, then Configure, starts Server, polls Ready,
// and calls AfterStart once the server answers; Observe serves /status.
type Engine interface {
	// Check finds the server's binaries and makes sure the data directory, if there is
	// one, is one this server can run. It returns a *Fault for what the user must fix.
	Check(ctx context.Context) error
	// Initialised reports whether the data directory exists.
	Initialised() bool
	// Initialise creates the data directory: an empty one on the primary, a clone of
	// the primary on a replica. It works in a temporary directory and moves it into
	// place only when complete, so a failure never leaves half a directory.
	Initialise(ctx context.Context) error
	// Configure writes the configuration Mooring owns, at every start.
	Configure(ctx context.Context) error
	// Server is the server's command, run in the foreground as the manager's child.
	Server() *exec.Cmd
	// StopSignal asks the server for a fast, clean shutdown.
	StopSignal() os.Signal
	// Ready reports whether the server answers queries.
	Ready(ctx context.Context) error
	// AfterStart runs once the server answers: users and replication on the primary,
	// the replica's link to it. The manager calls it again until it succeeds.
	AfterStart(ctx context.Context) error
	// Refresh applies changed mounted Secrets to the running server without a restart:
	// certificates and passwords. The manager calls it after AfterStart succeeded.
	Refresh(ctx context.Context) error
	// Observe reports the instance's role and position.
	Observe(ctx context.Context) (Observation, error)
}

// Observation is what an engine reports of its running server.
type Observation struct {
	// Role is what the server says it is: "primary", or "replica" while it is in
	// recovery (PostgreSQL) or has a replication connection configured (MariaDB/MySQL).
	Role string `json:"role"`
	// Position is the engine's own: the LSN (PostgreSQL), the GTID position (MariaDB).
	Position string `json:"position,omitempty"`
	// Sequence makes Position comparable across instances: the LSN in bytes for
	// PostgreSQL (replayed, on a replica), the highest applied GTID sequence number of
	// the primary's domain and server for MariaDB/MySQL. The operator subtracts a
	// replica's from the primary's to get its lag.
	Sequence *int64 `json:"sequence,omitempty"`
	// Streaming: a replica receives changes from the primary right now.
	Streaming bool `json:"streaming,omitempty"`
	// ReplicationError is the replica's last replication error, if the engine keeps one.
	ReplicationError string `json:"replicationError,omitempty"`
}

// Fault is a cause the user must act on; the manager keeps the server down while it
// lasts and reports it.
type Fault struct {
	// Reason is a CamelCase word for a condition's reason: MissingBinaries,
	// VersionMismatch, UnknownData, DiskFull, CloneFailed, InitFailed, PrimaryDataLost.
	Reason string `json:"reason"`
	// Message says what is wrong and what to do; never a secret.
	Message string `json:"message"`
}

func (f *Fault) Error() string { return f.Reason + ": " + f.Message }

func faultf(reason, format string, args ...any) *Fault {
	return &Fault{Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// The reasons of faults.
const (
	FaultMissingBinaries = "MissingBinaries"
	FaultVersionMismatch = "VersionMismatch"
	FaultUnknownData     = "UnknownData"
	FaultDiskFull        = "DiskFull"
	FaultCloneFailed     = "CloneFailed"
	FaultInitFailed      = "InitFailed"
	FaultServerFailed    = "ServerFailed"
)

// NewEngine returns the engine of c.Engine.
func NewEngine(c Config) (Engine, error) {
	switch c.Engine {
	case "postgresql":
		return newPostgres(c), nil
	case "mariadb", "mysql":
		return newMariaDB(c), nil
	}
	return nil, fmt.Errorf("unknown engine %q", c.Engine)
}
