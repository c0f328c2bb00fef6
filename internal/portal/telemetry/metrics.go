package telemetry

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Metrics are the portal's Prometheus metrics, in a registry of their own.
type Metrics struct {
	Registry *prometheus.Registry
	// Requests counts requests by route (the path pattern, never the raw path, so
	// cardinality stays bounded), method and status code.
	Requests *prometheus.CounterVec
	// Duration observes request durations by route, method and status code.
	Duration *prometheus.HistogramVec
	// RateLimited counts requests refused by a rate limit, by limit.
	RateLimited *prometheus.CounterVec
}

// NewMetrics makes and registers the metrics, with Go and process collectors.
func NewMetrics() *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		Requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mooring_portal_http_requests_total",
			Help: "HTTP requests served, by route, method and status code.",
		}, []string{"route", "method", "code"}),
		Duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "mooring_portal_http_request_duration_seconds",
			Help:    "HTTP request durations, by route, method and status code.",
			Buckets: prometheus.DefBuckets,
		}, []string{"route", "method", "code"}),
		RateLimited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mooring_portal_rate_limited_total",
			Help: "Requests refused with 429, by limit (ip or user).",
		}, []string{"limit"}),
	}
	m.Registry.MustRegister(m.Requests, m.Duration, m.RateLimited,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}
