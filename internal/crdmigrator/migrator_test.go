package crdmigrator_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mooringhq/mooring/internal/crdmigrator"
	"github.com/mooringhq/mooring/internal/testutil"
)

var c client.Client

// apiServer is the package's API server, started by the first test that requires it.
var apiServer = testutil.APIServer{Set: func(cfg *rest.Config) error {
	migrator, err := crdmigrator.New(cfg)
	if err != nil {
		return err
	}
	c = migrator.Client
	return nil
}}

func TestMain(m *testing.M) { apiServer.Main(m) }

// widgetCRD has two versions of one schema, so the API server converts between them
// without a webhook; storage says which one objects are written in.
func widgetCRD(group, storage string, versions ...string) *apiextensionsv1.CustomResourceDefinition {
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Scope: apiextensionsv1.NamespaceScoped,
		},
	}
	preserve := true
	for _, v := range versions {
		crd.Spec.Versions = append(crd.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{
			Name: v, Served: true, Storage: v == storage,
			Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
				Type: "object", XPreserveUnknownFields: &preserve,
			}},
		})
	}
	return crd
}

func establish(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	ctx := context.Background()
	if err := c.Create(ctx, crd); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 30*time.Second, "CRD "+crd.Name+" established", func() error {
		got := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(crd), got); err != nil {
			return err
		}
		for _, cond := range got.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("conditions %v", got.Status.Conditions)
	})
	// Established is not yet discovered: the API server's discovery document (which the
	// client's RESTMapper reads) can lag behind it for a moment.
	testutil.Eventually(t, 30*time.Second, "kind "+crd.Spec.Names.Kind+" discovered", func() error {
		_, err := c.RESTMapper().RESTMapping(schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind})
		return err
	})
}

func widgets(t *testing.T, gv schema.GroupVersion) map[string]*unstructured.Unstructured {
	t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gv.WithKind("WidgetList"))
	if err := c.List(context.Background(), list); err != nil {
		t.Fatalf("list widgets as %s: %v", gv.Version, err)
	}
	out := map[string]*unstructured.Unstructured{}
	for i := range list.Items {
		out[list.Items[i].GetNamespace()+"/"+list.Items[i].GetName()] = &list.Items[i]
	}
	return out
}

func getCRD(t *testing.T, name string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.Get(context.Background(), client.ObjectKey{Name: name}, crd); err != nil {
		t.Fatal(err)
	}
	return crd
}

// TestMigrate stores widgets as v1, makes v2 the storage version, migrates, and then
// removes v1 from the CRD altogether, which the API server allows only once no stored
// object can be in v1 any more; every widget must still read back unchanged.
func TestMigrate(t *testing.T) {
	apiServer.Require(t)
	ctx := context.Background()
	group := "migrate.test.mooring.dev"
	crd := widgetCRD(group, "v1", "v1", "v2")
	establish(t, crd)
	v1 := schema.GroupVersion{Group: group, Version: "v1"}
	v2 := schema.GroupVersion{Group: group, Version: "v2"}

	for _, ns := range []string{"default", "kube-system"} {
		for i := range 3 {
			u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"size": int64(i), "ns": ns}}}
			u.SetGroupVersionKind(v1.WithKind("Widget"))
			u.SetNamespace(ns)
			u.SetName(fmt.Sprintf("w%d", i))
			if err := c.Create(ctx, u); err != nil {
				t.Fatal(err)
			}
		}
	}
	before := widgets(t, v1)

	crd = getCRD(t, crd.Name)
	crd.Spec.Versions[0].Storage, crd.Spec.Versions[1].Storage = false, true
	if err := c.Update(ctx, crd); err != nil {
		t.Fatal(err)
	}
	if got := getCRD(t, crd.Name).Status.StoredVersions; !slices.Equal(got, []string{"v1", "v2"}) {
		t.Fatalf("storedVersions before migrating %v, want [v1 v2]", got)
	}

	m := &crdmigrator.Migrator{Client: c, CRDs: []string{crd.Name}}
	if err := m.Migrate(ctx, crd.Name); err != nil {
		t.Fatal(err)
	}
	migrated := getCRD(t, crd.Name)
	if got := migrated.Status.StoredVersions; !slices.Equal(got, []string{"v2"}) {
		t.Fatalf("storedVersions after migrating %v, want [v2]", got)
	}
	after := widgets(t, v2)
	for key, old := range before {
		now := after[key]
		if now == nil {
			t.Fatalf("widget %s lost", key)
		}
		if now.GetResourceVersion() == old.GetResourceVersion() {
			t.Errorf("widget %s keeps resourceVersion %s: it was not rewritten", key, old.GetResourceVersion())
		}
		if fmt.Sprint(now.Object["spec"]) != fmt.Sprint(old.Object["spec"]) {
			t.Errorf("widget %s spec %v, was %v", key, now.Object["spec"], old.Object["spec"])
		}
		if len(now.GetManagedFields()) != len(old.GetManagedFields()) {
			t.Errorf("widget %s gained managedFields %v", key, now.GetManagedFields())
		}
	}

	// Nothing left to do: a second run writes nothing.
	if err := m.Migrate(ctx, crd.Name); err != nil {
		t.Fatal(err)
	}
	if rv := getCRD(t, crd.Name).ResourceVersion; rv != migrated.ResourceVersion {
		t.Errorf("second run changed the CRD (resourceVersion %s -> %s)", migrated.ResourceVersion, rv)
	}
	for key, w := range widgets(t, v2) {
		if w.GetResourceVersion() != after[key].GetResourceVersion() {
			t.Errorf("second run rewrote widget %s", key)
		}
	}

	// v1 can go now.
	crd = getCRD(t, crd.Name)
	crd.Spec.Versions = crd.Spec.Versions[1:]
	if err := c.Update(ctx, crd); err != nil {
		t.Fatalf("removing v1 after the migration: %v", err)
	}
	testutil.Eventually(t, 30*time.Second, "every widget readable as v2 with v1 removed", func() error {
		got := widgets(t, v2)
		if len(got) != len(before) {
			return fmt.Errorf("%d widgets, want %d", len(got), len(before))
		}
		return nil
	})
}

// TestMigrateUntouchedWhenCurrent checks that a CRD whose storedVersions is already the
// storage version alone costs no write.
func TestMigrateUntouchedWhenCurrent(t *testing.T) {
	apiServer.Require(t)
	ctx := context.Background()
	group := "current.test.mooring.dev"
	crd := widgetCRD(group, "v1", "v1")
	establish(t, crd)
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"size": int64(1)}}}
	u.SetGroupVersionKind(schema.GroupVersionKind{Group: group, Version: "v1", Kind: "Widget"})
	u.SetNamespace("default")
	u.SetName("w")
	if err := c.Create(ctx, u); err != nil {
		t.Fatal(err)
	}
	crdBefore := getCRD(t, crd.Name)
	m := &crdmigrator.Migrator{Client: c, CRDs: []string{crd.Name}}
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if rv := getCRD(t, crd.Name).ResourceVersion; rv != crdBefore.ResourceVersion {
		t.Errorf("CRD written (resourceVersion %s -> %s)", crdBefore.ResourceVersion, rv)
	}
	got := widgets(t, schema.GroupVersion{Group: group, Version: "v1"})["default/w"]
	if got.GetResourceVersion() != u.GetResourceVersion() {
		t.Errorf("widget rewritten (resourceVersion %s -> %s)", u.GetResourceVersion(), got.GetResourceVersion())
	}
}
