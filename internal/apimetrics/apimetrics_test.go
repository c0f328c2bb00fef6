package apimetrics

import "testing"

func TestResource(t *testing.T) {
	tests := map[string]string{
		"/api/v1/namespaces/ns/configmaps/c":                      "configmaps",
		"/api/v1/namespaces/ns/configmaps":                        "configmaps",
		"/apis/apps/v1/namespaces/ns/deployments/web":             "deployments",
		"/apis/mooring.dev/v1/namespaces/ns/apps/web/status":      "apps/status",
		"/apis/coordination.k8s.io/v1/namespaces/x/leases/l":      "leases",
		"/api/v1/namespaces/ns":                                   "namespaces",
		"/apis/apiextensions.k8s.io/v1/customresourcedefinitions": "customresourcedefinitions",
		"/api":          "other",
		"/healthz":      "other",
		"/apis/apps/v1": "discovery",
	}
	for path, want := range tests {
		if got := Resource(path); got != want {
			t.Errorf("Resource(%q) = %q, want %q", path, got, want)
		}
	}
}
