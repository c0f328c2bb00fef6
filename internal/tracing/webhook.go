package tracing

import (
	"net/http"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/trace"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// WebhookServer wraps s so that every webhook registered on it (admission and conversion)
// serves each request inside a span named after its path, with tp (nil: the global
// provider). The API server sends no trace context, so each request starts a trace.
func WebhookServer(s webhook.Server, tp trace.TracerProvider) webhook.Server {
	return &tracedServer{Server: s, tp: tp}
}

type tracedServer struct {
	webhook.Server
	tp trace.TracerProvider
}

// Register registers hook at path, wrapped in a server span.
func (s *tracedServer) Register(path string, hook http.Handler) {
	// Named "webhook <path>": one name per webhook, whatever the method.
	opts := []otelhttp.Option{otelhttp.WithSpanNameFormatter(func(operation string, _ *http.Request) string { return operation })}
	if s.tp != nil {
		opts = append(opts, otelhttp.WithTracerProvider(s.tp))
	}
	s.Server.Register(path, otelhttp.NewHandler(hook, "webhook "+path, opts...))
}
