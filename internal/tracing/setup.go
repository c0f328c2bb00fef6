package tracing

import (
	"context"
	"fmt"
	"os"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Options configure tracing.
type Options struct {
	// SamplingRatio is the share of new traces recorded, 0 to 1. A span whose parent was
	// sampled (or not) follows its parent, so a trace is kept or dropped whole.
	SamplingRatio float64
	// Version is recorded as service.version.
	Version string
}

// Enabled reports whether the environment asks for traces to be exported: an OTLP
// endpoint is set, and neither OTEL_SDK_DISABLED=true nor OTEL_TRACES_EXPORTER=none turns
// the SDK or its trace exporter off. Those two are the OpenTelemetry SDK's standard off
// switches; honouring them lets an operator of the cluster silence tracing without
// removing an endpoint that a shared ConfigMap or a mutating webhook injects.
func Enabled() bool {
	// The environment specification reads OTEL_SDK_DISABLED as a boolean that is true
	// only for a case-insensitive "true"; any other value leaves the SDK on.
	if strings.EqualFold(strings.TrimSpace(os.Getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	// OTEL_TRACES_EXPORTER is a comma-separated list whose value "none" means no trace
	// exporter; unset or "otlp" is the OTLP exporter that Setup builds.
	for _, e := range strings.Split(os.Getenv("OTEL_TRACES_EXPORTER"), ",") {
		if strings.EqualFold(strings.TrimSpace(e), "none") {
			return false
		}
	}
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// Setup installs the global tracer provider and W3C trace-context propagation when
// Enabled; otherwise it changes nothing. The returned function flushes and stops the
// exporter; call it on the way out.
func Setup(ctx context.Context, o Options) (shutdown func(context.Context) error, err error) {
	if !Enabled() {
		return func(context.Context) error { return nil }, nil
	}
	if o.SamplingRatio < 0 || o.SamplingRatio > 1 {
		return nil, fmt.Errorf("trace sampling ratio %v is not between 0 and 1", o.SamplingRatio)
	}
	exporter, err := newExporter(ctx)
	if err != nil {
		return nil, fmt.Errorf("create OTLP trace exporter: %w", err)
	}
	// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, when set, win over these defaults.
	res, err := resource.Merge(resource.NewSchemaless(
		attribute.String("service.name", "mooring"), attribute.String("service.version", o.Version)),
		resource.Environment())
	if err != nil {
		return nil, fmt.Errorf("trace resource: %w", err)
	}
	tp := NewProvider(sdktrace.NewBatchSpanProcessor(exporter), o.SamplingRatio, res)
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagator())
	return tp.Shutdown, nil
}

// NewProvider returns a tracer provider that samples ratio of new traces, follows the
// parent's decision otherwise, and hands spans to processor.
func NewProvider(processor sdktrace.SpanProcessor, ratio float64, res *resource.Resource) *sdktrace.TracerProvider {
	opts := []sdktrace.TracerProviderOption{
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio))),
		sdktrace.WithSpanProcessor(processor),
	}
	if res != nil {
		opts = append(opts, sdktrace.WithResource(res))
	}
	return sdktrace.NewTracerProvider(opts...)
}

// newExporter speaks OTLP over HTTP (protobuf), the OpenTelemetry default, or gRPC when
// OTEL_EXPORTER_OTLP_PROTOCOL says so. Both read the endpoint, headers, TLS and timeout
// settings from the standard OTEL_EXPORTER_OTLP_* variables.
func newExporter(ctx context.Context) (sdktrace.SpanExporter, error) {
	protocol := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if protocol == "" {
		protocol = os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	switch protocol {
	case "", "http/protobuf":
		return otlptracehttp.New(ctx)
	case "grpc":
		return otlptracegrpc.New(ctx)
	default:
		return nil, fmt.Errorf("OTLP protocol %q is not supported (want http/protobuf or grpc)", protocol)
	}
}

// propagator is W3C trace context plus baggage, what OTLP back ends expect.
func propagator() propagation.TextMapPropagator {
	return propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
}
