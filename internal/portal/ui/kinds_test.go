package ui

import (
	"slices"
	"testing"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
)

// The namespace page shows every kind of api/v1's list, in its order, under the path
// segment the portal's API serves it at.
func TestEveryKindHasAView(t *testing.T) {
	var want []string
	for _, k := range mooringv1.Kinds() {
		want = append(want, k.Plural)
		spec := kindSpecs[k.Plural]
		if spec == nil {
			t.Errorf("%s: no entry in kindUI, so the portal does not show it", k.Kind)
			continue
		}
		if spec.Resource != k.Plural || spec.Kind != k.Kind || spec.Title == "" || len(spec.Columns) == 0 {
			t.Errorf("%s: view %q/%q titled %q with %d columns", k.Kind, spec.Resource, spec.Kind, spec.Title, len(spec.Columns))
		}
	}
	if !slices.Equal(kindOrder, want) {
		t.Errorf("sections %v, want api/v1's order %v", kindOrder, want)
	}
	for kind := range kindUI {
		if !slices.ContainsFunc(mooringv1.Kinds(), func(k mooringv1.KindInfo) bool { return k.Kind == kind }) {
			t.Errorf("kindUI has %s, which is not among api/v1's Kinds", kind)
		}
	}
}
