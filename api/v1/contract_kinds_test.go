package v1_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/api/v1beta1"
)

// crds reads the mooring.dev CRDs that make manifests generates, by kind.
func crds(t *testing.T) map[string]*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "..", "config", "crd", "bases", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs in config/crd/bases: %v", err)
	}
	out := map[string]*apiextensionsv1.CustomResourceDefinition{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(data, crd); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if crd.Spec.Group == mooringv1.GroupVersion.Group {
			out[crd.Spec.Names.Kind] = crd
		}
	}
	return out
}

// The list of kinds every program takes its kinds from says what the CRDs say: the same
// kinds, plurals, singulars, short names, served versions, storage version and scope.
func TestKindsMatchTheCRDs(t *testing.T) {
	defs := crds(t)
	seen := map[string]bool{}
	for _, k := range mooringv1.Kinds() {
		seen[k.Kind] = true
		crd, ok := defs[k.Kind]
		if !ok {
			t.Errorf("%s: no CRD of group %s in config/crd/bases has this kind", k.Kind, mooringv1.GroupVersion.Group)
			continue
		}
		var served []string
		storage := ""
		for _, v := range crd.Spec.Versions {
			if v.Served {
				served = append(served, v.Name)
			}
			if v.Storage {
				storage = v.Name
			}
		}
		n := crd.Spec.Names
		for _, c := range []struct{ field, list, crd string }{
			{"plural", k.Plural, n.Plural},
			{"singular", k.Singular, n.Singular},
			{"short names", strings.Join(k.ShortNames, ","), strings.Join(n.ShortNames, ",")},
			{"versions served", strings.Join(k.Versions, ","), strings.Join(served, ",")},
			{"version (the CRD's storage version)", k.Version, storage},
			{"namespaced", boolString(k.Namespaced), boolString(crd.Spec.Scope == apiextensionsv1.NamespaceScoped)},
		} {
			if c.list != c.crd {
				t.Errorf("%s %s: api/v1's Kinds say %q, the CRD %q", k.Kind, c.field, c.list, c.crd)
			}
		}
	}
	for kind := range defs {
		if !seen[kind] {
			t.Errorf("the CRD of %s is missing from api/v1's Kinds", kind)
		}
	}
}

func boolString(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// Kinds hands out copies: a caller that changes its list changes nobody else's.
func TestKindsIsACopy(t *testing.T) {
	a := mooringv1.Kinds()
	a[0].Plural = "changed"
	for i := range a {
		a[i].ShortNames = append(a[i].ShortNames[:0:0], "x")
		if len(a[i].Versions) > 0 {
			a[i].Versions[0] = "changed"
		}
	}
	for _, k := range mooringv1.Kinds() {
		if k.Plural == "changed" || slices.Contains(k.ShortNames, "x") || slices.Contains(k.Versions, "changed") {
			t.Fatalf("a caller's change reached the list: %+v", k)
		}
	}
}

func TestKindNames(t *testing.T) {
	k, ok := mooringv1.KindByPlural("databaseclusters")
	if !ok {
		t.Fatal("databaseclusters not found")
	}
	want := []string{"databaseclusters", "databasecluster", "dbc", "databaseclusters.mooring.dev", "databasecluster.mooring.dev"}
	if got := k.Names(); !slices.Equal(got, want) {
		t.Errorf("Names() = %v, want %v", got, want)
	}
	if gvr := k.GroupVersionResource(); gvr.String() != "mooring.dev/v1beta1, Resource=databaseclusters" {
		t.Errorf("GroupVersionResource() = %s", gvr)
	}
	if _, ok := mooringv1.KindByPlural("deployments"); ok {
		t.Error("deployments found among Mooring's kinds")
	}
}

// Every finalizer Mooring sets starts with FinalizerPrefix, or the operator would not
// remove it when a changed spec no longer needs it.
func TestFinalizersHaveThePrefix(t *testing.T) {
	for _, f := range []string{mooringv1.BackupCleanupFinalizer, v1beta1.FinalSnapshotFinalizer, v1beta1.VolumesFinalizer} {
		if !strings.HasPrefix(f, mooringv1.FinalizerPrefix) || len(f) == len(mooringv1.FinalizerPrefix) {
			t.Errorf("finalizer %q: want a name after %q", f, mooringv1.FinalizerPrefix)
		}
	}
}
