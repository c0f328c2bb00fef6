package metrics

import (
	"testing"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
)

// The collector measures every kind of api/v1's list, and nothing else.
func TestEveryKindIsCollected(t *testing.T) {
	kinds := map[string]bool{}
	for _, k := range mooringv1.Kinds() {
		kinds[k.Kind] = true
		if listers[k.Kind] == nil {
			t.Errorf("%s: no lister, so the collector reports none of its objects", k.Kind)
		}
	}
	for kind := range listers {
		if !kinds[kind] {
			t.Errorf("lister for %s, which is not among api/v1's Kinds", kind)
		}
	}
}
