package apimetrics

import (
	"net/http/httptest"
	"testing"
)

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

// A watch and a dry run are counted apart from the writes: neither changes anything.
func TestMethod(t *testing.T) {
	tests := map[string]string{
		"GET /api/v1/namespaces/ns/configmaps?watch=true":                  "WATCH",
		"POST /apis/apps/v1/namespaces/ns/deployments?dryRun=All":          "DRYRUN",
		"POST /apis/apps/v1/namespaces/ns/deployments":                     "POST",
		"PATCH /apis/apps/v1/namespaces/ns/deployments/web?fieldManager=m": "PATCH",
	}
	for request, want := range tests {
		var method, target string
		for i := range request {
			if request[i] == ' ' {
				method, target = request[:i], request[i+1:]
				break
			}
		}
		if got := Method(httptest.NewRequest(method, target, nil)); got != want {
			t.Errorf("Method(%s) = %q, want %q", request, got, want)
		}
	}
	before := map[Key]float64{}
	after := map[Key]float64{{"DRYRUN", "deployments"}: 3, {"WATCH", "pods"}: 1, {"POST", "configmaps"}: 1}
	if w := Writes(before, after); len(w) != 1 || w[Key{"POST", "configmaps"}] != 1 {
		t.Errorf("Writes = %v, want only the POST of configmaps", w)
	}
}
