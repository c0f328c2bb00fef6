package v1

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The kinds' names, as the API, kubectl and the metrics' kind label spell them.
const (
	KindApp             = "App"
	KindCacheInstance   = "CacheInstance"
	KindDatabaseCluster = "DatabaseCluster"
	KindBackup          = "Backup"
)

// The kinds' resources (plurals), as API paths, RBAC rules and kubectl name them.
const (
	ResourceApps             = "apps"
	ResourceCacheInstances   = "cacheinstances"
	ResourceDatabaseClusters = "databaseclusters"
	ResourceBackups          = "backups"
)

// KindInfo is one of Mooring's kinds as its CRD declares it (a test in this package
// compares the list with config/crd/bases). kubectl mooring, the portal and the metrics
// take their kinds from Kinds, so a kind added here is served by all of them.
//
// +kubebuilder:object:generate=false
type KindInfo struct {
	// Kind is the kind's name, e.g. App.
	Kind string
	// Plural is the resource's name in API paths and kubectl, e.g. apps.
	Plural string
	// Singular is the lower-case kind, e.g. app.
	Singular string
	// ShortNames are the CRD's short names, e.g. dbc.
	ShortNames []string
	// Versions are the versions the API server serves, oldest first.
	Versions []string
	// Version is the version the CRD stores and Mooring's programs read and write.
	Version string
	// Namespaced is true for a namespaced kind (the CRD's scope).
	Namespaced bool
}

// kinds is the list Kinds copies, in the order Mooring's programs show them.
var kinds = []KindInfo{
	{Kind: KindApp, Plural: ResourceApps, Singular: "app", Versions: []string{"v1"}, Version: "v1", Namespaced: true},
	{Kind: KindCacheInstance, Plural: ResourceCacheInstances, Singular: "cacheinstance", Versions: []string{"v1"}, Version: "v1", Namespaced: true},
	{Kind: KindDatabaseCluster, Plural: ResourceDatabaseClusters, Singular: "databasecluster", ShortNames: []string{"dbc"},
		Versions: []string{"v1alpha1", "v1beta1"}, Version: "v1beta1", Namespaced: true},
	{Kind: KindBackup, Plural: ResourceBackups, Singular: "backup", Versions: []string{"v1"}, Version: "v1", Namespaced: true},
}

// Kinds returns Mooring's kinds (the portal's User, of portal.mooring.dev, aside), in the
// order its programs show them: App, CacheInstance, DatabaseCluster, Backup. The slice is
// the caller's to change.
func Kinds() []KindInfo {
	out := make([]KindInfo, len(kinds))
	for i, k := range kinds {
		k.ShortNames, k.Versions = slices.Clone(k.ShortNames), slices.Clone(k.Versions)
		out[i] = k
	}
	return out
}

// KindByPlural returns the kind whose plural is plural.
func KindByPlural(plural string) (KindInfo, bool) {
	for _, k := range Kinds() {
		if k.Plural == plural {
			return k, true
		}
	}
	return KindInfo{}, false
}

// GroupVersionKind is the kind at Version.
func (k KindInfo) GroupVersionKind() schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: GroupVersion.Group, Version: k.Version, Kind: k.Kind}
}

// GroupVersionResource is the resource at Version.
func (k KindInfo) GroupVersionResource() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: GroupVersion.Group, Version: k.Version, Resource: k.Plural}
}

// Names are the names kubectl accepts for the kind: its plural, singular, short names
// and the plural and singular qualified by the group (apps.mooring.dev), all lower case.
func (k KindInfo) Names() []string {
	names := []string{k.Plural, k.Singular}
	names = append(names, k.ShortNames...)
	for _, n := range []string{k.Plural, k.Singular} {
		names = append(names, n+"."+GroupVersion.Group)
	}
	for i := range names {
		names[i] = strings.ToLower(names[i])
	}
	return names
}
