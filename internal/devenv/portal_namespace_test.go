package devenv

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/mooringhq/mooring/internal/testutil"
)

func portalObjects(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	var objs []*unstructured.Unstructured
	for _, f := range portalFiles {
		data, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "config", "portal", f))
		if err != nil {
			t.Fatal(err)
		}
		docs, err := readDocsFrom(string(data))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		objs = append(objs, docs...)
	}
	return objs
}

// A portal installed in another namespace mentions mooring-portal nowhere as a namespace,
// and shares with the default install only the objects that are the same for every portal.
func TestPortalInNamespace(t *testing.T) {
	moved := InNamespace(portalObjects(t), "portal-b")
	if got := InNamespace(portalObjects(t), PortalNamespace); len(got) != len(moved) {
		t.Fatalf("InNamespace(%s) changed the number of objects", PortalNamespace)
	}
	key := func(o *unstructured.Unstructured) string {
		return o.GetKind() + " " + o.GetNamespace() + "/" + o.GetName()
	}
	defaults := map[string]string{}
	for _, o := range portalObjects(t) {
		data, _ := json.Marshal(o.Object)
		defaults[key(o)] = string(data)
	}
	var shared []string
	for _, o := range moved {
		data, _ := json.Marshal(o.Object)
		if strings.Contains(string(data), `"namespace":"`+PortalNamespace+`"`) || o.GetKind() == "Namespace" && o.GetName() == PortalNamespace {
			t.Errorf("%s still names namespace %s: %s", key(o), PortalNamespace, data)
		}
		if d, ok := defaults[key(o)]; ok {
			if d != string(data) {
				t.Errorf("%s is applied by both portals with different contents:\n%s\n%s", key(o), d, data)
			}
			shared = append(shared, key(o))
		}
	}
	for _, want := range []string{"Namespace /portal-b", "ServiceAccount portal-b/mooring-portal", "Role portal-b/mooring-portal",
		"RoleBinding portal-b/mooring-portal", "ClusterRoleBinding /mooring-portal-portal-b", "RoleBinding mooring-portal-users/mooring-portal-portal-b"} {
		found := false
		for _, o := range moved {
			found = found || key(o) == want
		}
		if !found {
			t.Errorf("no %s among the moved objects", want)
		}
	}
	t.Logf("shared with the default install: %v", shared)
}
