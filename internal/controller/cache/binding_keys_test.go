package cache

import (
	"slices"
	"testing"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/internal/bindingenv"
)

// The App webhook refuses spec.env entries named like a binding's variables from
// bindingenv's list of keys: it must be what the binding ConfigMap publishes.
func TestBindingConfigMapKeysAreBindingenvs(t *testing.T) {
	var keys []string
	for k := range BindingConfigMap(newCache(nil)).Data {
		keys = append(keys, k)
	}
	want := bindingenv.ConfigMapKeys(mooringv1.BindingKindCacheInstance)
	slices.Sort(keys)
	slices.Sort(want)
	if !slices.Equal(keys, want) {
		t.Errorf("binding ConfigMap keys = %v, bindingenv says %v", keys, want)
	}
}
