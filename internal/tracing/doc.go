// Package tracing is Mooring's opt-in OpenTelemetry tracing. When
// OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set, Setup
// installs a tracer provider that exports over OTLP; then every reconcile is a span (made
// by internal/engine), every API request it sends is a child span (Instrument), and every
// webhook request the operator serves is a span too (WebhookServer). Without the variable,
// or with OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none, nothing is exported and the
// instrumentation costs next to nothing.
package tracing
