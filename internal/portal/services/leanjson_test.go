package services

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// sameJSON fails unless a and b are the same JSON value.
func sameJSON(t *testing.T, what string, a, b []byte) {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("%s: %v in %s", what, err, a)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("%s: %v in %s", what, err, b)
	}
	if !reflect.DeepEqual(x, y) {
		t.Fatalf("%s:\n got %s\nwant %s", what, a, b)
	}
}

func TestLeanListCutsOnlyTheItemsManagedFields(t *testing.T) {
	mf := `"managedFields":[{"manager":"m","fieldsV1":{"f:spec":{"f:x":{}}},"time":"2026-01-01T00:00:00Z"}]`
	item := func(meta string) string {
		return `{"apiVersion":"mooring.dev/v1","kind":"App","metadata":{` + meta + `},"spec":{"note":"a \"quoted\" <b>","metadata":{` + mf + `},"replicas":3,"ratio":1.5e3}}`
	}
	tests := map[string]string{
		"first member":  item(mf + `,"name":"a","namespace":"n"`),
		"middle member": item(`"name":"a",` + mf + `,"namespace":"n"`),
		"last member":   item(`"name":"a","namespace":"n",` + mf),
		"only member":   item(mf),
		"none":          item(`"name":"a"`),
		"spaced":        strings.ReplaceAll(item(`"name" : "a" , `+mf+` , "uid":"u"`), ",", " ,\n "),
		"escaped key":   item(`"name":"a","managed\u0046ields":[{}]`),
	}
	for name, it := range tests {
		t.Run(name, func(t *testing.T) {
			raw := []byte(`{"apiVersion":"mooring.dev/v1","items":[` + it + `,` + item(`"name":"b",`+mf) + `],"kind":"AppList","metadata":{"resourceVersion":"7","continue":"c"}}` + "\n")
			got, err := leanList(slices.Clone(raw)) // it cuts in place
			if err != nil {
				t.Fatal(err)
			}
			// What the portal answered when it decoded the list and encoded it again.
			l, err := decodeLeanList(raw)
			if err != nil {
				t.Fatal(err)
			}
			want, err := json.Marshal(l)
			if err != nil {
				t.Fatal(err)
			}
			sameJSON(t, "the lean list", got, want)
			if strings.Count(string(got), "managedFields") != 2 {
				t.Fatalf("want only the two spec.metadata.managedFields left (not the items'), got %s", got)
			}
		})
	}
}

func TestLeanListSameBytesAsDecodingAndEncoding(t *testing.T) {
	// The API server encodes as encoding/json does: keys sorted, <>& escaped, compact.
	obj := map[string]any{"apiVersion": "mooring.dev/v1", "kind": "AppList", "metadata": map[string]any{"resourceVersion": "9"},
		"items": []any{map[string]any{"apiVersion": "mooring.dev/v1", "kind": "App",
			"metadata": map[string]any{"name": "a", "managedFields": []any{map[string]any{"manager": "x"}}, "uid": "u"},
			"spec":     map[string]any{"config": "a=<b> & c\n", "replicas": int64(2)}}}}
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	got, err := leanList(append(slices.Clone(raw), '\n'))
	if err != nil {
		t.Fatal(err)
	}
	l, err := decodeLeanList(raw)
	if err != nil {
		t.Fatal(err)
	}
	want, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatalf("want the bytes the portal sent before:\n got %s\nwant %s", got, want)
	}
}

func TestLeanListRefusesWhatItCannotPassOn(t *testing.T) {
	tests := map[string]struct {
		raw     string
		notLean bool // decoded the slow way, not an error
	}{
		"item without apiVersion and kind": {raw: `{"kind":"AppList","items":[{"kind":"App","metadata":{"managedFields":[],"name":"a"}},{"metadata":{"name":"b"}}]}`, notLean: true},
		"items null":                       {raw: `{"kind":"AppList","items":null}`, notLean: true},
		"item no object":                   {raw: `{"kind":"AppList","items":[1]}`},
		"truncated":                        {raw: `{"kind":`},
		"unterminated string":              {raw: `{"kind":"AppList`},
		"text after":                       {raw: `{"kind":"AppList"} x`},
		"bad literal":                      {raw: `{"kind":nope}`},
		"no object":                        {raw: `[]`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			raw := []byte(tc.raw)
			_, err := leanList(raw)
			if err == nil || errors.Is(err, errNotLean) != tc.notLean {
				t.Fatalf("want an error (errNotLean: %v), got %v", tc.notLean, err)
			}
			if string(raw) != tc.raw {
				t.Fatalf("a refused list must be left as it came (the slow way decodes it): got %s", raw)
			}
		})
	}
}

func TestLeanObject(t *testing.T) {
	raw := []byte(`{"apiVersion":"mooring.dev/v1","kind":"App","metadata":{"managedFields":[{"manager":"m"}],"name":"a"},"spec":{"x":[1,true,null,"s"]}}`)
	got, err := leanObject(slices.Clone(raw))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(raw); err != nil {
		t.Fatal(err)
	}
	u.SetManagedFields(nil)
	want, err := json.Marshal(u)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatalf("got %s\nwant %s", got, want)
	}
	if _, err := leanObject([]byte(`{"metadata":{"name":"a"}`)); err == nil {
		t.Fatal("truncated: want an error")
	}
}
