package engine

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace/noop"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
)

// recordSpans installs a global tracer provider that records every span, for one test.
func recordSpans(t *testing.T) *tracetest.SpanRecorder {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)))
	// Once set, the global provider cannot go back to its initial state; a no-op one is
	// what the operator has without tracing.
	t.Cleanup(func() { otel.SetTracerProvider(noop.NewTracerProvider()) })
	return rec
}

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	out := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		out[kv.Key] = kv.Value
	}
	return out
}

func TestReconcileSpanAttributesAndLogIDs(t *testing.T) {
	rec := recordSpans(t)
	var lines []string
	log := funcr.New(func(prefix, args string) { lines = append(lines, args) }, funcr.Options{})
	ctx := ctrl.LoggerInto(context.Background(), log)

	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "shop", Name: "web"}}
	ctx, span := startReconcile(ctx, "App", req)
	ctrl.LoggerFrom(ctx).Info("Created Deployment")
	app := &mooringv1.App{ObjectMeta: metav1.ObjectMeta{Generation: 3}}
	endReconcile(span, app, ctrl.Result{RequeueAfter: time.Minute}, nil)

	ended := rec.Ended()
	if len(ended) != 1 {
		t.Fatalf("%d spans ended, want 1", len(ended))
	}
	s := ended[0]
	if s.Name() != "Reconcile App" {
		t.Errorf("span name %q", s.Name())
	}
	a := attrs(s)
	for k, want := range map[attribute.Key]string{AttrKind: "App", AttrNamespace: "shop", AttrName: "web", AttrResult: "requeue_after"} {
		if got := a[k].AsString(); got != want {
			t.Errorf("attribute %s = %q, want %q", k, got, want)
		}
	}
	if got := a[AttrGeneration].AsInt64(); got != 3 {
		t.Errorf("generation attribute %d, want 3", got)
	}
	if s.Status().Code == codes.Error {
		t.Errorf("a successful reconcile has status %v", s.Status())
	}
	want := `"trace_id"="` + s.SpanContext().TraceID().String() + `" "span_id"="` + s.SpanContext().SpanID().String() + `"`
	if len(lines) != 1 || !strings.Contains(lines[0], want) {
		t.Errorf("log lines %q do not carry %s", lines, want)
	}
}

func TestReconcileSpanErrorAndInvalidSpec(t *testing.T) {
	rec := recordSpans(t)
	ctx := context.Background()
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "shop", Name: "web"}}

	_, span := startReconcile(ctx, "App", req)
	endReconcile(span, &mooringv1.App{}, ctrl.Result{}, errors.New("apply Deployment web: forbidden"))
	invalid := &mooringv1.App{}
	setCondition(invalid, mooringv1.ConditionReady, metav1.ConditionFalse, mooringv1.ReasonInvalidSpec, "spec.image: required")
	_, span = startReconcile(ctx, "App", req)
	endReconcile(span, invalid, ctrl.Result{}, nil)

	ended := rec.Ended()
	if len(ended) != 2 {
		t.Fatalf("%d spans ended, want 2", len(ended))
	}
	failed := ended[0]
	if failed.Status().Code != codes.Error || !strings.Contains(failed.Status().Description, "forbidden") {
		t.Errorf("failed reconcile span status %+v, want Error with the message", failed.Status())
	}
	if got := attrs(failed)[AttrResult].AsString(); got != "error" {
		t.Errorf("failed reconcile result %q", got)
	}
	if len(failed.Events()) == 0 || failed.Events()[0].Name != "exception" {
		t.Errorf("failed reconcile span has no recorded error event: %v", failed.Events())
	}
	if got := attrs(ended[1])[AttrResult].AsString(); got != "invalid_spec" {
		t.Errorf("invalid spec result %q, want invalid_spec", got)
	}
}

func TestNoTraceIDsWithoutTracing(t *testing.T) {
	otel.SetTracerProvider(noop.NewTracerProvider())
	var lines []string
	log := funcr.New(func(prefix, args string) { lines = append(lines, args) }, funcr.Options{})
	ctx, span := startReconcile(ctrl.LoggerInto(context.Background(), log), "App", ctrl.Request{})
	ctrl.LoggerFrom(ctx).Info("x")
	span.End()
	if strings.Contains(strings.Join(lines, ""), "trace_id") {
		t.Errorf("without a tracer provider the log carries trace ids: %q", lines)
	}
}
