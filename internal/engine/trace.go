package engine

import (
	"context"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
)

// Span attribute keys of a reconcile span.
const (
	AttrKind       = attribute.Key("mooring.kind")
	AttrNamespace  = attribute.Key("k8s.namespace.name")
	AttrName       = attribute.Key("mooring.name")
	AttrGeneration = attribute.Key("mooring.generation")
	AttrResult     = attribute.Key("mooring.result")
)

// tracerName names the engine's tracer; the global tracer provider (internal/tracing)
// decides whether its spans are recorded. Without one they cost next to nothing.
const tracerName = "github.com/mooringhq/mooring/internal/engine"

// startReconcile opens the span of one reconcile of kind and puts its trace_id and span_id
// on the logger in ctx, so every log line of the reconcile can be found from the trace
// and back. The API requests made with the returned context become its children.
func startReconcile(ctx context.Context, kind string, req ctrl.Request) (context.Context, trace.Span) {
	ctx, span := otel.Tracer(tracerName).Start(ctx, "Reconcile "+kind, trace.WithAttributes(
		AttrKind.String(kind), AttrNamespace.String(req.Namespace), AttrName.String(req.Name)))
	if sc := span.SpanContext(); sc.IsValid() {
		ctx = ctrl.LoggerInto(ctx, ctrl.LoggerFrom(ctx).WithValues(
			"trace_id", sc.TraceID().String(), "span_id", sc.SpanID().String()))
	}
	return ctx, span
}

// endReconcile records how the reconcile of obj ended: the generation it saw (0 when the
// object was gone), the result and, on an error, the error. A spec the user must fix is
// not retried and returns no error; its result is "invalid_spec".
func endReconcile(span trace.Span, obj Object, res ctrl.Result, err error) {
	result := "success"
	switch {
	case err != nil:
		result = "error"
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	case HasCondition(obj, mooringv1.ConditionReady, metav1.ConditionFalse, mooringv1.ReasonInvalidSpec):
		result = "invalid_spec"
	case res.RequeueAfter > 0:
		result = "requeue_after"
	}
	span.SetAttributes(AttrGeneration.Int64(obj.GetGeneration()), AttrResult.String(result))
	span.End()
}
