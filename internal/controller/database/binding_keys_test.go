package database

import (
	"slices"
	"testing"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/api/v1beta1"
	"github.com/mooringhq/mooring/internal/bindingenv"
)

// The App webhook refuses spec.env entries named like a binding's variables from
// bindingenv's list of keys: it must be what the binding ConfigMap publishes.
func TestBindingConfigMapKeysAreBindingenvs(t *testing.T) {
	for _, e := range []v1beta1.DatabaseEngine{v1beta1.PostgreSQL, v1beta1.MySQL} {
		var keys []string
		for k := range BindingConfigMap(newDB(e, nil)).Data {
			keys = append(keys, k)
		}
		want := bindingenv.ConfigMapKeys(mooringv1.BindingKindDatabaseCluster)
		slices.Sort(keys)
		slices.Sort(want)
		if !slices.Equal(keys, want) {
			t.Errorf("%s binding ConfigMap keys = %v, bindingenv says %v", e, keys, want)
		}
	}
	if got := bindingenv.SecretKeys(mooringv1.BindingKindDatabaseCluster); !slices.Equal(got, []string{UsernameKey, PasswordKey}) {
		t.Errorf("bindingenv secret keys = %v, want the credentials Secret's %s and %s", got, UsernameKey, PasswordKey)
	}
}
