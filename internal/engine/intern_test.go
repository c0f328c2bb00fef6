package engine

import (
	"strings"
	"testing"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
)

// Two children decoded separately share their repeated metadata strings once trimmed,
// and keep their values.
func TestInternMetadataSharesRepeatedStrings(t *testing.T) {
	// strings.Clone: each object's strings in memory of their own, as a decoder leaves them.
	child := func(name string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetNamespace(strings.Clone("team-a"))
		u.SetName(name)
		u.SetLabels(map[string]string{strings.Clone(mooringv1.ManagedByLabel): strings.Clone(mooringv1.ManagedBy),
			strings.Clone(mooringv1.InstanceLabel): name})
		u.SetAnnotations(map[string]string{strings.Clone(mooringv1.SpecHashAnnotation): name + "-hash"})
		u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: strings.Clone("mooring.dev/v1"), Kind: strings.Clone("App"), Name: name}})
		internMetadata(u)
		return u
	}
	a, b := child("a"), child("b")
	same := func(x, y string) bool { return unsafe.StringData(x) == unsafe.StringData(y) }
	var keyA, keyB string
	for k := range a.GetLabels() {
		if k == mooringv1.ManagedByLabel {
			keyA = k
		}
	}
	for k := range b.GetLabels() {
		if k == mooringv1.ManagedByLabel {
			keyB = k
		}
	}
	switch {
	case !same(a.GetNamespace(), b.GetNamespace()):
		t.Error("namespace not shared")
	case !same(keyA, keyB):
		t.Error("label key not shared")
	case !same(a.GetLabels()[mooringv1.ManagedByLabel], b.GetLabels()[mooringv1.ManagedByLabel]):
		t.Error("managed-by value not shared")
	case a.GetLabels()[mooringv1.InstanceLabel] != "a" || b.GetAnnotations()[mooringv1.SpecHashAnnotation] != "b-hash":
		t.Errorf("values changed: %v %v", a.GetLabels(), b.GetAnnotations())
	case a.GetOwnerReferences()[0].Kind != "App" || b.GetOwnerReferences()[0].Name != "b":
		t.Errorf("owner references changed: %v", b.GetOwnerReferences())
	}
}
