package tracing_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/mooringhq/mooring/internal/tracing"
)

func newRecorder() (*tracetest.SpanRecorder, *sdktrace.TracerProvider) {
	rec := tracetest.NewSpanRecorder()
	return rec, tracing.NewProvider(rec, 1, nil)
}

func names(spans []sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name())
	}
	return out
}

// TestInstrumentTracesRequestsInsideASpanOnly sends requests through a client built from
// an instrumented rest.Config to a plain HTTP server standing in for the network.
func TestInstrumentTracesRequestsInsideASpanOnly(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Traceparent") == "" && r.URL.Query().Get("watch") != "true" && r.Method == http.MethodPatch {
			t.Errorf("a traced request carries no traceparent header")
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	prevProp := otel.GetTextMapPropagator()
	otel.SetTextMapPropagator(tracing.Propagator())
	defer otel.SetTextMapPropagator(prevProp)

	rec, tp := newRecorder()
	cfg := &rest.Config{Host: srv.URL}
	tracing.Instrument(cfg, tp)
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, parent := tp.Tracer("test").Start(context.Background(), "Reconcile App")
	send := func(ctx context.Context, method, path string) {
		req, err := http.NewRequestWithContext(ctx, method, srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := httpClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
	send(ctx, http.MethodPatch, "/apis/apps/v1/namespaces/shop/deployments/web")
	send(ctx, http.MethodGet, "/api/v1/namespaces/shop/configmaps?watch=true")
	send(context.Background(), http.MethodPut, "/apis/coordination.k8s.io/v1/namespaces/x/leases/mooring.dev")
	parent.End()

	ended := rec.Ended()
	if len(ended) != 2 {
		t.Fatalf("spans %v, want the PATCH and its parent only (no watch, no request outside a span)", names(ended))
	}
	child := ended[0]
	if child.Name() != "PATCH deployments" || child.SpanKind() != trace.SpanKindClient {
		t.Errorf("child span %q kind %v", child.Name(), child.SpanKind())
	}
	if child.Parent().SpanID() != parent.SpanContext().SpanID() || child.SpanContext().TraceID() != parent.SpanContext().TraceID() {
		t.Errorf("the request span is not a child of the reconcile span")
	}
}

func TestWebhookRequestsAreTraced(t *testing.T) {
	rec, tp := newRecorder()
	mux := http.NewServeMux()
	srv := tracing.WebhookServer(webhook.NewServer(webhook.Options{WebhookMux: mux}), tp)
	srv.Register("/validate-mooring-dev-v1-app", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !trace.SpanContextFromContext(r.Context()).IsValid() {
			t.Errorf("the webhook handler runs outside a span")
		}
	}))
	hs := httptest.NewServer(mux)
	defer hs.Close()
	resp, err := http.Post(hs.URL+"/validate-mooring-dev-v1-app", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	ended := rec.Ended()
	if len(ended) != 1 || ended[0].Name() != "webhook /validate-mooring-dev-v1-app" || ended[0].SpanKind() != trace.SpanKindServer {
		t.Fatalf("spans %v, want one server span for the webhook", names(ended))
	}
}

func TestParentBasedRatioSampling(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := tracing.NewProvider(rec, 0, nil)
	_, root := tp.Tracer("test").Start(context.Background(), "root")
	root.End()
	if root.SpanContext().IsSampled() {
		t.Errorf("ratio 0 sampled a new trace")
	}
	// A sampled parent from elsewhere (a traceparent header) keeps its children sampled.
	parent := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{1},
		TraceFlags: trace.FlagsSampled, Remote: true})
	_, child := tp.Tracer("test").Start(trace.ContextWithRemoteSpanContext(context.Background(), parent), "child")
	child.End()
	if !child.SpanContext().IsSampled() || len(rec.Ended()) != 1 {
		t.Errorf("a child of a sampled parent was not recorded (ended: %v)", names(rec.Ended()))
	}
}

// TestSetupExportsOverOTLP runs an OTLP/HTTP receiver and checks that a span made after
// Setup arrives there, with Mooring's service name.
func TestSetupExportsOverOTLP(t *testing.T) {
	var (
		mu       sync.Mutex
		received []*collectortrace.ExportTraceServiceRequest
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil || r.URL.Path != "/v1/traces" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		req := &collectortrace.ExportTraceServiceRequest{}
		if err := proto.Unmarshal(body, req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		received = append(received, req)
		mu.Unlock()
		out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	defer srv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	prev := otel.GetTracerProvider()
	defer otel.SetTracerProvider(prev)

	ctx := context.Background()
	shutdown, err := tracing.Setup(ctx, tracing.Options{SamplingRatio: 1, Version: "v0.0.0-test"})
	if err != nil {
		t.Fatal(err)
	}
	_, span := otel.Tracer("test").Start(ctx, "Reconcile App")
	span.End()
	if err := shutdown(ctx); err != nil { // flushes the batch
		t.Fatalf("shutdown: %v", err)
	}

	mu.Lock()
	defer mu.Unlock()
	var found bool
	for _, req := range received {
		for _, rs := range req.GetResourceSpans() {
			service := ""
			for _, kv := range rs.GetResource().GetAttributes() {
				if kv.GetKey() == "service.name" {
					service = kv.GetValue().GetStringValue()
				}
			}
			for _, ss := range rs.GetScopeSpans() {
				for _, s := range ss.GetSpans() {
					if s.GetName() == "Reconcile App" && service == "mooring" {
						found = true
					}
				}
			}
		}
	}
	if !found {
		t.Fatalf("the receiver got %d export requests without the span of service mooring: %v", len(received), received)
	}
}

func TestSetupWithoutEndpointDoesNothing(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	prev := otel.GetTracerProvider()
	shutdown, err := tracing.Setup(context.Background(), tracing.Options{SamplingRatio: 1})
	if err != nil {
		t.Fatal(err)
	}
	if otel.GetTracerProvider() != prev {
		t.Errorf("Setup without an endpoint replaced the global tracer provider")
	}
	if err := shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestSetupHonoursTheSDKOffSwitches: with an endpoint set, OTEL_SDK_DISABLED=true or
// OTEL_TRACES_EXPORTER=none still leaves tracing off, as the OpenTelemetry environment
// specification says; other values leave it on.
func TestSetupHonoursTheSDKOffSwitches(t *testing.T) {
	tests := []struct {
		name, variable, value string
		enabled               bool
	}{
		{"SDK disabled", "OTEL_SDK_DISABLED", "true", false},
		{"SDK disabled, any case", "OTEL_SDK_DISABLED", "TRUE", false},
		{"SDK not disabled", "OTEL_SDK_DISABLED", "false", true},
		{"a non-boolean leaves the SDK on", "OTEL_SDK_DISABLED", "yes", true},
		{"no trace exporter", "OTEL_TRACES_EXPORTER", "none", false},
		{"no trace exporter, spaced and capitalised", "OTEL_TRACES_EXPORTER", " None ", false},
		{"OTLP trace exporter", "OTEL_TRACES_EXPORTER", "otlp", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// An endpoint nothing listens on: a provider would be installed, not dialled.
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
			t.Setenv("OTEL_SDK_DISABLED", "")
			t.Setenv("OTEL_TRACES_EXPORTER", "")
			t.Setenv(tt.variable, tt.value)
			prev := otel.GetTracerProvider()
			defer otel.SetTracerProvider(prev)
			if got := tracing.Enabled(); got != tt.enabled {
				t.Errorf("Enabled() with %s=%q = %v, want %v", tt.variable, tt.value, got, tt.enabled)
			}
			shutdown, err := tracing.Setup(context.Background(), tracing.Options{SamplingRatio: 1})
			if err != nil {
				t.Fatal(err)
			}
			if replaced := otel.GetTracerProvider() != prev; replaced != tt.enabled {
				t.Errorf("Setup with %s=%q replaced the global tracer provider: %v, want %v", tt.variable, tt.value, replaced, tt.enabled)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			// Nothing was exported, so the flush has nothing to send to the dead endpoint.
			if err := shutdown(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}
