package tracing

import (
	"net/http"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/trace"
	"k8s.io/client-go/rest"

	"github.com/mooringhq/mooring/internal/apimetrics"
)

// Instrument makes every client built from cfg trace its API requests as children of the
// span in the request's context, with tp (nil: the global provider).
//
// Watches are left out: they last minutes and say nothing about one reconcile. So are
// requests outside any span (informer lists, leader election renewals every few
// seconds): each would start a trace of its own and bury the reconciles.
func Instrument(cfg *rest.Config, tp trace.TracerProvider) {
	opts := []otelhttp.Option{
		otelhttp.WithFilter(traced),
		otelhttp.WithSpanNameFormatter(spanName),
	}
	if tp != nil {
		opts = append(opts, otelhttp.WithTracerProvider(tp))
	}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return otelhttp.NewTransport(rt, opts...)
	})
}

func traced(r *http.Request) bool {
	return r.URL.Query().Get("watch") != "true" && trace.SpanContextFromContext(r.Context()).IsValid()
}

// spanName is "<METHOD> <resource>", e.g. "PATCH deployments", "PATCH apps/status" or
// "DRYRUN deployments", the same grouping as mooring_api_requests_total.
func spanName(_ string, r *http.Request) string {
	return apimetrics.Method(r) + " " + apimetrics.Resource(r.URL.Path)
}
