package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/mooringhq/mooring/internal/portal/portaltest"
)

// TestTracingSpansRequestsAndAPICalls turns tracing on (OTEL_EXPORTER_OTLP_ENDPOINT set)
// with an in-memory recorder in place of the OTLP exporter: a request gets a server span
// named after its route, its API server calls get client spans in the same trace, and
// its log lines carry the trace and span ids.
func TestTracingSpansRequestsAndAPICalls(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4317")
	rec := tracetest.NewSpanRecorder()
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)))
	t.Cleanup(func() { otel.SetTracerProvider(prev) })

	p := newPortal(t, nil)
	u, pw := p.Register("traced")
	tok := p.Login(u.Username, pw).AccessToken
	// Listing namespaces asks the API server as the user (authentication reads the User
	// from the portal's cache: no call).
	portaltest.Expect(t, p.Do("GET", "/api/v1/namespaces", tok, nil), http.StatusOK, "namespaces")

	var server trace.SpanContext
	for _, s := range rec.Ended() {
		if s.Name() == "GET /api/v1/namespaces" && s.SpanKind() == trace.SpanKindServer {
			server = s.SpanContext()
		}
	}
	if !server.IsValid() {
		var names []string
		for _, s := range rec.Ended() {
			names = append(names, s.Name())
		}
		t.Fatalf("no server span named after the route; spans: %v", names)
	}
	var apiCalls int
	for _, s := range rec.Ended() {
		if s.SpanKind() == trace.SpanKindClient && s.Parent().SpanID() == server.SpanID() {
			apiCalls++
		}
	}
	if apiCalls == 0 {
		t.Fatal("the request's API server calls have no client spans under its span")
	}
	found := false
	for _, line := range strings.Split(logs.String(), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) == nil && rec["route"] == "/api/v1/namespaces" && rec["trace_id"] == server.TraceID().String() && rec["span_id"] != nil {
			found = true
		}
	}
	if !found {
		t.Fatalf("no log line of the request carries trace_id %s", server.TraceID())
	}
}
