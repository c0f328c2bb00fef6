package instance

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"time"
)

// Status is the JSON of /status: what the operator reads of each instance.
type Status struct {
	// Pod, Engine and Version say who answers.
	Pod     string `json:"pod"`
	Engine  string `json:"engine"`
	Version string `json:"version"`
	// ConfiguredRole is the role the pod was given (by its index).
	ConfiguredRole string `json:"configuredRole"`
	// Running: the server process runs. Ready: it answers queries.
	Running bool `json:"running"`
	Ready   bool `json:"ready"`
	// Phase says what the manager is doing: Checking, Initialising, Starting, Running,
	// Faulted, Stopping.
	Phase string `json:"phase"`
	// Fault is set while a fault keeps the server down.
	Fault *Fault `json:"fault,omitempty"`
	// Observation is the running server's role and position, when it answers.
	Observation *Observation `json:"observation,omitempty"`
	// Cloning: the instance found its volume empty in a cluster that has data and is
	// copying the primary; it is not ready until the copy is complete.
	Cloning bool `json:"cloning,omitempty"`
	// Error is the last error of a step the manager retries (AfterStart, a clone).
	Error string `json:"error,omitempty"`
}

// state is the manager's shared view, read by the HTTP handlers.
type state struct {
	mu sync.Mutex
	s  Status
}

func (st *state) update(f func(*Status)) {
	st.mu.Lock()
	defer st.mu.Unlock()
	f(&st.s)
}

func (st *state) get() Status {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.s
}

// handler serves the probes and /status. /readyz asks the server now (a stale answer
// would keep a stopped server in the Service); /status, for the operator only, adds the
// observation, at most a second old.
func (m *manager) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		// The manager answers: it is alive. A faulted instance stays alive on purpose.
		w.WriteHeader(http.StatusOK)
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		s := m.st.get()
		if !s.Running {
			http.Error(w, "server not running: "+s.Phase, http.StatusServiceUnavailable)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), 4*time.Second)
		defer cancel()
		if err := m.engine.Ready(ctx); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		if !m.configured.Load() {
			http.Error(w, "server answers; users and replication are being set up", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, r *http.Request) {
		if !m.authorized(r) {
			// Only the operator asks (statusauth.go); the probes use /healthz and /readyz.
			http.Error(w, "a bearer token of this cluster is required", http.StatusUnauthorized)
			return
		}
		s := m.observed(r.Context())
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(s)
	})
	return mux
}
