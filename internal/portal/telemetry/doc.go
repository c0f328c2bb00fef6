// Package telemetry is how the portal is observed: structured JSON logs (log/slog) that
// carry the request id and trace ids of the context, Prometheus metrics, and
// OpenTelemetry tracing over OTLP when OTEL_EXPORTER_OTLP_ENDPOINT is set.
package telemetry
