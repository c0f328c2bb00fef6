// Package apimetrics counts the requests Mooring sends to the API server, by verb and
// resource, as the Prometheus counter mooring_api_requests_total. It is how "a converged
// cluster costs no writes" is measured, in tests and in production alike.
package apimetrics

import (
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Requests counts API requests by HTTP method and resource (e.g. PATCH deployments). A
// watch counts as WATCH, a dry run (the App webhook's creates of an App's children, which
// store nothing) as DRYRUN: neither is a write.
var Requests = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "mooring_api_requests_total",
	Help: "Requests sent to the Kubernetes API server by HTTP method (WATCH for a watch, DRYRUN for a dry run, which stores nothing) and resource.",
}, []string{"method", "resource"})

func init() {
	metrics.Registry.MustRegister(Requests)
}

// Instrument makes every client built from cfg count its requests.
func Instrument(cfg *rest.Config) {
	prev := cfg.WrapTransport
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		if prev != nil {
			rt = prev(rt)
		}
		return roundTripper{next: rt}
	}
}

type roundTripper struct{ next http.RoundTripper }

func (r roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	Requests.WithLabelValues(Method(req), Resource(req.URL.Path)).Inc()
	return r.next.RoundTrip(req)
}

// Method is the method a request is counted under: its HTTP method, WATCH for a watch,
// DRYRUN for a dry run.
func Method(req *http.Request) string {
	switch q := req.URL.Query(); {
	case q.Get("watch") == "true":
		return "WATCH"
	case q.Has("dryRun"):
		return "DRYRUN"
	default:
		return req.Method
	}
}

// Resource extracts the resource (with subresource, e.g. "apps/status") from an API
// path such as /apis/apps/v1/namespaces/ns/deployments/web or /api/v1/configmaps.
func Resource(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	// Skip the prefix: "api/v1" or "apis/<group>/<version>".
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return "other"
	}
	if len(parts) >= 2 && parts[0] == "namespaces" {
		if len(parts) == 2 {
			return "namespaces"
		}
		parts = parts[2:]
	}
	switch len(parts) {
	case 0:
		return "discovery"
	case 1, 2:
		return parts[0]
	default:
		return parts[0] + "/" + parts[2]
	}
}

// Key identifies one counter of Requests: HTTP method (or WATCH) and resource.
type Key struct{ Method, Resource string }

// Snapshot reads the current value of every Requests counter.
func Snapshot() map[Key]float64 {
	ch := make(chan prometheus.Metric, 64)
	go func() { Requests.Collect(ch); close(ch) }()
	out := map[Key]float64{}
	for m := range ch {
		var pb dto.Metric
		if err := m.Write(&pb); err != nil {
			continue
		}
		var k Key
		for _, l := range pb.GetLabel() {
			switch l.GetName() {
			case "method":
				k.Method = l.GetValue()
			case "resource":
				k.Resource = l.GetValue()
			}
		}
		out[k] = pb.GetCounter().GetValue()
	}
	return out
}

// Writes returns the requests that change something (every method but GET, WATCH and
// DRYRUN) made between two snapshots, by key.
func Writes(before, after map[Key]float64) map[Key]float64 {
	out := map[Key]float64{}
	for k, v := range after {
		if k.Method == http.MethodGet || k.Method == "WATCH" || k.Method == "DRYRUN" {
			continue
		}
		if d := v - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}
