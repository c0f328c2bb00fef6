package tracing_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/internal/engine"
	"github.com/mooringhq/mooring/internal/testutil"
	"github.com/mooringhq/mooring/internal/tracing"
)

var (
	env *testutil.Env
	// spans records every span of the operator under test: the manager in testutil is
	// built by manager.New, which instruments its clients and webhook server with the
	// global tracer provider, as the operator binary does.
	spans = tracetest.NewSpanRecorder()
)

func TestMain(m *testing.M) {
	tp := tracing.NewProvider(spans, 1, nil)
	otel.SetTracerProvider(tp)
	testutil.Main(m, func(e *testutil.Env) { env = e })
}

// reconcileSpans returns the ended reconcile spans of kind about ns/name.
func reconcileSpans(kind, ns, name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range spans.Ended() {
		if s.Name() != "Reconcile "+kind {
			continue
		}
		a := attrs(s)
		if a[string(engine.AttrNamespace)] == ns && a[string(engine.AttrName)] == name {
			out = append(out, s)
		}
	}
	return out
}

func attrs(s sdktrace.ReadOnlySpan) map[string]string {
	out := map[string]string{}
	for _, kv := range s.Attributes() {
		out[string(kv.Key)] = kv.Value.String()
	}
	return out
}

// children returns the ended spans whose parent is s.
func children(s sdktrace.ReadOnlySpan) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, c := range spans.Ended() {
		if c.Parent().SpanID() == s.SpanContext().SpanID() && c.SpanContext().TraceID() == s.SpanContext().TraceID() {
			out = append(out, c)
		}
	}
	return out
}

func TestReconcileSpanParentsItsAPIRequests(t *testing.T) {
	ns := env.Namespace(t)
	a := &mooringv1.App{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: mooringv1.AppSpec{Image: "nginx:1.27", Replicas: ptr.To[int32](2), Port: ptr.To[int32](80)}}
	if err := env.Client.Create(context.Background(), a); err != nil {
		t.Fatalf("create App: %v", err)
	}
	// A new App's Deployment is created (POST), not applied (docs/performance.md).
	testutil.Eventually(t, testutil.DefaultTimeout, "a reconcile span of App web that created its Deployment as a child span", func() error {
		var seen []string
		for _, s := range reconcileSpans("App", ns, "web") {
			a := attrs(s)
			if a[string(engine.AttrKind)] != "App" || a[string(engine.AttrGeneration)] != "1" || a[string(engine.AttrResult)] == "" {
				return fmt.Errorf("reconcile span attributes %v", a)
			}
			for _, c := range children(s) {
				seen = append(seen, c.Name())
				if c.Name() == "POST deployments" {
					return nil
				}
			}
		}
		return fmt.Errorf("child spans seen: %v", seen)
	})
	// The admission webhooks the create went through are traced as server spans.
	var webhooks []string
	for _, s := range spans.Ended() {
		if strings.HasPrefix(s.Name(), "webhook /") {
			webhooks = append(webhooks, s.Name())
		}
	}
	if !strings.Contains(strings.Join(webhooks, " "), "app") {
		t.Errorf("no webhook span for the App's admission; webhook spans: %v", webhooks)
	}
}

func TestFailedReconcileSpanHasErrorStatus(t *testing.T) {
	ns := env.Namespace(t)
	// Somebody else's Service of the name the App wants: Mooring refuses to take it over,
	// and the reconcile fails after reading it from the API server.
	foreign := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "blocked", Namespace: ns},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}
	if err := env.Client.Create(context.Background(), foreign); err != nil {
		t.Fatalf("create Service: %v", err)
	}
	a := &mooringv1.App{ObjectMeta: metav1.ObjectMeta{Name: "blocked", Namespace: ns},
		Spec: mooringv1.AppSpec{Image: "nginx:1.27", Port: ptr.To[int32](80)}}
	if err := env.Client.Create(context.Background(), a); err != nil {
		t.Fatalf("create App: %v", err)
	}
	testutil.Eventually(t, testutil.DefaultTimeout, "a reconcile span of App blocked with status Error naming the Service, with API request children", func() error {
		var last string
		for _, s := range reconcileSpans("App", ns, "blocked") {
			last = fmt.Sprintf("status %v result %s children %d", s.Status(), attrs(s)[string(engine.AttrResult)], len(children(s)))
			if s.Status().Code == codes.Error && attrs(s)[string(engine.AttrResult)] == "error" &&
				strings.Contains(s.Status().Description, "Service blocked") && len(children(s)) > 0 {
				return nil
			}
		}
		return fmt.Errorf("last reconcile span: %s", last)
	})
}
