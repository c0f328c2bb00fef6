package services

import (
	"testing"
)

func TestDecodeLeanList(t *testing.T) {
	raw := []byte(`{"apiVersion":"mooring.dev/v1","kind":"AppList","metadata":{"resourceVersion":"7","continue":"c1"},
	"items":[
	  {"apiVersion":"mooring.dev/v1","kind":"App","metadata":{"name":"a","managedFields":[{"manager":"m"}]},"spec":{"replicas":3}},
	  {"metadata":{"name":"b"}}
	]}`)
	l, err := decodeLeanList(raw)
	if err != nil {
		t.Fatal(err)
	}
	if l.GetContinue() != "c1" || l.GetResourceVersion() != "7" || len(l.Items) != 2 {
		t.Fatalf("want the list's metadata and 2 items, got continue %q, resourceVersion %q, %d items", l.GetContinue(), l.GetResourceVersion(), len(l.Items))
	}
	if _, ok := l.Object["items"]; ok {
		t.Fatal("items stay in the list's Object too; they belong in Items only")
	}
	a, b := l.Items[0], l.Items[1]
	if a.GetName() != "a" || a.GetManagedFields() != nil {
		t.Fatalf("item a: want its managedFields dropped, got %v", a.Object)
	}
	if r, ok := a.Object["spec"].(map[string]any)["replicas"].(int64); !ok || r != 3 {
		t.Fatalf("want integers as int64, as the dynamic client decodes them, got %T %v", a.Object["spec"].(map[string]any)["replicas"], a.Object["spec"])
	}
	if b.GetKind() != "App" || b.GetAPIVersion() != "mooring.dev/v1" {
		t.Fatalf("an item without apiVersion and kind gets the list's: got %q %q", b.GetAPIVersion(), b.GetKind())
	}
	empty, err := decodeLeanList([]byte(`{"apiVersion":"v1","kind":"AppList","items":null}`))
	if err != nil || empty.Items == nil || len(empty.Items) != 0 {
		t.Fatalf("an empty list: want no items (not nil), got %v, %v", empty, err)
	}
	if _, err := decodeLeanList([]byte(`{"kind":"AppList","items":[1]}`)); err == nil {
		t.Fatal("an item that is no object: want an error")
	}
	if _, err := decodeLeanList([]byte(`{"kind":`)); err == nil {
		t.Fatal("truncated JSON: want an error")
	}
}
