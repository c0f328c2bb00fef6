package main

import (
	"context"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// warnings collects the API server's warnings (client-go's warning handler).
type warnings struct {
	mu   sync.Mutex
	list []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, text)
}

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.list
	w.list = nil
	return out
}

// A request for DatabaseClusters through v1alpha1, as the chart's CRD serves it, is
// answered with a deprecation warning naming v1beta1; one through v1beta1, or for the
// other kinds, is not. (A list needs no conversion webhook, which nothing serves here.)
func TestV1alpha1IsDeprecated(t *testing.T) {
	cfg := rest.CopyConfig(apiServer(t))
	w := &warnings{}
	cfg.WarningHandler = w
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	list := func(version string) []string {
		t.Helper()
		l := &unstructured.UnstructuredList{}
		l.SetAPIVersion("mooring.dev/" + version)
		l.SetKind("DatabaseClusterList")
		if err := c.List(context.Background(), l); err != nil {
			t.Fatalf("list %s DatabaseClusters: %v", version, err)
		}
		return w.take()
	}
	const want = "mooring.dev/v1alpha1 DatabaseCluster is deprecated and will be removed in a future release; use mooring.dev/v1beta1"
	if got := list("v1alpha1"); len(got) != 1 || got[0] != want {
		t.Errorf("v1alpha1: warnings %q, want [%q]", got, want)
	}
	if got := list("v1beta1"); len(got) != 0 {
		t.Errorf("v1beta1: warnings %q, want none", got)
	}
	for _, kind := range []string{"App", "Backup", "CacheInstance"} {
		l := &unstructured.UnstructuredList{}
		l.SetAPIVersion("mooring.dev/v1")
		l.SetKind(kind + "List")
		if err := c.List(context.Background(), l); err != nil {
			t.Fatalf("list %s: %v", kind, err)
		}
		if got := w.take(); len(got) != 0 {
			t.Errorf("%s: warnings %q, want none", kind, got)
		}
	}
}
