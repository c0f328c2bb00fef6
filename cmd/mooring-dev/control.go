package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mooringhq/mooring/internal/localcluster"
)

// The running "run" owns the component processes, so "restart" and "status" ask it,
// over HTTP on a Unix socket in the state directory: the path follows from --state as
// every other file does, no port has to be found or recorded, the file's mode keeps
// other users of the machine out (a loopback port would let any of them restart
// components), and the answer can carry an error back, which a signal could not.
const controlSocket = "dev.sock"

// supervisor is what the control socket serves: localcluster.Supervisor.
type supervisor interface {
	Names() []string
	Status() []localcluster.ComponentStatus
	Restart(ctx context.Context, name string) (time.Duration, error)
}

// nodeFaults are the faults of the real nodes that need the process owning them (the
// kubelets are its children): localcluster.Cluster's NodeStop and NodeStart.
type nodeFaults interface {
	NodeStop(ctx context.Context, node string) error
	NodeStart(ctx context.Context, node string) error
}

// controlHandler answers GET /status with the components as JSON and POST
// /restart/<component> once the component is ready again; an unknown name is a 404
// listing the valid ones. POST /fault/node-stop/<node> and /fault/node-start/<node> stop
// and start a real node (node is nil when the run has none).
func controlHandler(sup supervisor, node nodeFaults) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /fault/{fault}/{node}", func(w http.ResponseWriter, r *http.Request) {
		if node == nil {
			http.Error(w, "this run has no real node (see mooring-dev run --real-node)", http.StatusConflict)
			return
		}
		var err error
		switch f := r.PathValue("fault"); f {
		case "node-stop":
			err = node.NodeStop(r.Context(), r.PathValue("node"))
		case "node-start":
			err = node.NodeStart(r.Context(), r.PathValue("node"))
		default:
			http.Error(w, fmt.Sprintf("no node fault %q; node-stop or node-start", f), http.StatusNotFound)
			return
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		fmt.Fprintf(w, "%s %s done\n", r.PathValue("fault"), r.PathValue("node"))
	})
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(sup.Status())
	})
	mux.HandleFunc("POST /restart/{component}", func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("component")
		if names := sup.Names(); !slices.Contains(names, name) {
			http.Error(w, fmt.Sprintf("no component %q; components: %s", name, strings.Join(names, ", ")), http.StatusNotFound)
			return
		}
		down, err := sup.Restart(r.Context(), name)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		pid := 0
		for _, st := range sup.Status() {
			if st.Name == name {
				pid = st.Pid
			}
		}
		fmt.Fprintf(w, "%s restarted, ready again after %s (pid %d)\n", name, down.Round(100*time.Millisecond), pid)
	})
	return mux
}

// serveControl listens on the state directory's control socket until ctx ends. Any
// socket file there is stale: the caller owns the state directory (its pid file).
func serveControl(ctx context.Context, state string, sup supervisor, node nodeFaults) (stop func(), err error) {
	path := filepath.Join(state, controlSocket)
	_ = os.Remove(path)
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("control socket %s (mooring-dev restart and status): %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("control socket: %w", err)
	}
	srv := &http.Server{Handler: controlHandler(sup, node), ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	go func() { _ = srv.Serve(ln) }()
	return func() {
		_ = srv.Close()
		_ = os.Remove(path)
	}, nil
}

// controlClient talks to the control socket of the run holding state.
func controlClient(state string) (*http.Client, error) {
	if _, ok := running(state); !ok {
		return nil, fmt.Errorf("nothing running with state %s (start it with: mooring-dev up)", state)
	}
	path := filepath.Join(state, controlSocket)
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("the run holding %s is not ready yet (no %s); see %s", state, path, filepath.Join(state, devLog))
	}
	return &http.Client{
		// A restart waits until the component is ready again: up to 2 minutes.
		Timeout: 3 * time.Minute,
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", path)
		}},
	}, nil
}

// restartComponent asks the run to restart one component and prints its answer.
func restartComponent(ctx context.Context, cfg config, name string, out io.Writer) error {
	client, err := controlClient(cfg.state)
	if err != nil {
		return err
	}
	// Say what is going on before a restart that may take seconds, but not for a name
	// the run will refuse.
	if components, err := fetchStatus(ctx, client); err == nil &&
		slices.ContainsFunc(components, func(c localcluster.ComponentStatus) bool { return c.Name == name }) {
		fmt.Fprintf(out, "mooring-dev: restarting %s\n", name)
	}
	return post(ctx, client, "/restart/"+name, out)
}

// post asks the running mooring-dev to act (path under its control socket) and prints
// its answer.
func post(ctx context.Context, client *http.Client, path string, out io.Writer) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://mooring-dev"+path, nil)
	if err != nil {
		return err
	}
	body, err := do(client, req)
	if err != nil {
		return err
	}
	fmt.Fprint(out, "mooring-dev: "+body)
	return nil
}

// showStatus prints one line per component of the run.
func showStatus(ctx context.Context, cfg config, out io.Writer) error {
	client, err := controlClient(cfg.state)
	if err != nil {
		return err
	}
	components, err := fetchStatus(ctx, client)
	if err != nil {
		return err
	}
	printStatus(out, components, time.Now())
	return nil
}

func fetchStatus(ctx context.Context, client *http.Client) ([]localcluster.ComponentStatus, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://mooring-dev/status", nil)
	if err != nil {
		return nil, err
	}
	body, err := do(client, req)
	if err != nil {
		return nil, err
	}
	var components []localcluster.ComponentStatus
	if err := json.Unmarshal([]byte(body), &components); err != nil {
		return nil, fmt.Errorf("read status: %w", err)
	}
	return components, nil
}

// printStatus writes the components as a table.
func printStatus(out io.Writer, components []localcluster.ComponentStatus, now time.Time) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "COMPONENT\tSTATE\tPID\tRESTARTS\tUP\tLAST EXIT\tLOG")
	for _, c := range components {
		state, up := c.State, "-"
		switch c.State {
		case "running":
			up = now.Sub(c.Since).Round(time.Second).String()
		case "restarting":
			state += " in " + max(0, c.NextTry.Sub(now)).Round(100*time.Millisecond).String()
		}
		lastExit := c.LastExit
		if lastExit == "" {
			lastExit = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%s\n", c.Name, state, c.Pid, c.Restarts, up, lastExit, c.Log)
	}
	_ = tw.Flush()
}

// do sends req and returns the body of a 200, or the body as the error otherwise.
func do(client *http.Client, req *http.Request) (string, error) {
	resp, err := client.Do(req)
	if err != nil {
		return "", fmt.Errorf("ask the running mooring-dev: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", fmt.Errorf("read the answer of the running mooring-dev: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", errors.New(strings.TrimSpace(string(body)))
	}
	return string(body), nil
}
