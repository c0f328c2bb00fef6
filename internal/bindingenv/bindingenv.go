// Package bindingenv names the environment variables an App's binding with env: true sets
// in its pods. The App's builders (internal/controller/app) set them, and the App webhook
// (internal/webhook) refuses spec.env entries that would set the same names and builds
// the Deployment it dry-runs with them; all take the names from here.
package bindingenv

import (
	"strings"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
)

// Binding entries the credentials Secret of a binding holds, after those of its ConfigMap.
const (
	UsernameKey = "username"
	PasswordKey = "password"
)

// configMapKeys are the entries each kind's binding ConfigMap publishes, by
// spec.bindings[].ref.kind (the controllers' BindingConfigMap; their unit tests hold them
// to this list).
var configMapKeys = map[string][]string{
	mooringv1.BindingKindDatabaseCluster: {"type", "provider", "host", "port", "database"},
	mooringv1.BindingKindCacheInstance:   {"type", "provider", "host", "port"},
}

// secretKeys are the entries of each kind's credentials Secret a binding projects.
var secretKeys = map[string][]string{
	mooringv1.BindingKindDatabaseCluster: {UsernameKey, PasswordKey},
}

// ConfigMapKeys are the entries the binding ConfigMap of a service of kind publishes.
func ConfigMapKeys(kind string) []string { return append([]string(nil), configMapKeys[kind]...) }

// SecretKeys are the entries of the credentials Secret a binding to kind projects.
func SecretKeys(kind string) []string { return append([]string(nil), secretKeys[kind]...) }

// Prefix is the prefix of a binding's environment variables: its name upper-cased, "-"
// as "_".
func Prefix(bindingName string) string {
	return strings.ToUpper(strings.ReplaceAll(bindingName, "-", "_")) + "_"
}

// Name is the variable a binding sets for one entry: the prefix and the entry's key
// upper-cased, "-" as "_" (binding "orders", key "password": ORDERS_PASSWORD).
func Name(bindingName, key string) string {
	return Prefix(bindingName) + strings.ToUpper(strings.ReplaceAll(key, "-", "_"))
}

// Names are the variables a binding with env sets for a service of kind, in the order the
// pods get them: its ConfigMap's entries, then its Secret's.
func Names(bindingName, kind string) []string {
	var out []string
	for _, k := range append(ConfigMapKeys(kind), SecretKeys(kind)...) {
		out = append(out, Name(bindingName, k))
	}
	return out
}
