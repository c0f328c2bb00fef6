package v1alpha1

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/randfill"

	"github.com/mooringhq/mooring/api/v1beta1"
)

func TestConvertRenamesReplicas(t *testing.T) {
	alpha := &DatabaseCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "db"},
		Spec:       DatabaseClusterSpec{Engine: "mysql", Replicas: 3, Version: "8.4"},
	}
	hub := &v1beta1.DatabaseCluster{}
	if err := alpha.ConvertTo(hub); err != nil {
		t.Fatal(err)
	}
	if hub.Spec.ReplicaCount != 3 || hub.Spec.Engine != v1beta1.MySQL || hub.Spec.Version != "8.4" {
		t.Fatalf("hub spec = %+v, want mysql 8.4 with replicaCount 3", hub.Spec)
	}
	if hub.Annotations != nil {
		t.Fatalf("hub annotations = %v, want none", hub.Annotations)
	}
	back := &DatabaseCluster{}
	if err := back.ConvertFrom(hub); err != nil {
		t.Fatal(err)
	}
	if back.Spec.Replicas != 3 || back.Annotations != nil {
		t.Fatalf("back = %+v, annotations %v", back.Spec, back.Annotations)
	}
}

// fill makes a random v1beta1 DatabaseCluster from fuzz input. Quantities are filled as
// real quantities: random bytes in their private fields are not objects a client can make.
func fill(data []byte) *v1beta1.DatabaseCluster {
	f := randfill.NewFromGoFuzz(data).NilChance(0.3).Funcs(
		func(q *resource.Quantity, c randfill.Continue) {
			*q = *resource.NewQuantity(c.Int63n(1<<40), resource.BinarySI)
		},
		func(tm *metav1.Time, c randfill.Continue) {
			*tm = metav1.Unix(c.Int63n(1<<32), 0)
		},
	)
	obj := &v1beta1.DatabaseCluster{}
	f.Fill(obj)
	obj.TypeMeta = metav1.TypeMeta{}
	delete(obj.Annotations, ConversionAnnotation)
	if len(obj.Annotations) == 0 {
		obj.Annotations = nil
	}
	return obj
}

// FuzzHubRoundTrip proves v1beta1 → v1alpha1 → v1beta1 lossless. `go test` runs the seed
// corpus; `go test -fuzz FuzzHubRoundTrip ./api/v1alpha1` explores further.
func FuzzHubRoundTrip(f *testing.F) {
	for _, seed := range []string{"", "a", "mooring", "database cluster with storage", "\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		orig := fill(data)
		alpha := &DatabaseCluster{}
		if err := alpha.ConvertFrom(orig.DeepCopy()); err != nil {
			t.Fatalf("ConvertFrom: %v", err)
		}
		got := &v1beta1.DatabaseCluster{}
		if err := alpha.ConvertTo(got); err != nil {
			t.Fatalf("ConvertTo: %v", err)
		}
		if !equality.Semantic.DeepEqual(orig, got) {
			t.Fatalf("round trip changed the object:\nbefore %+v\nafter  %+v", orig, got)
		}
	})
}

// FuzzSpokeRoundTrip proves v1alpha1 → v1beta1 → v1alpha1 lossless.
func FuzzSpokeRoundTrip(f *testing.F) {
	for _, seed := range []string{"", "b", "replicas", "\xff\xfe\xfd\xfc\xfb\xfa\xf9\xf8"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		orig := &DatabaseCluster{}
		randfill.NewFromGoFuzz(data).NilChance(0.3).Funcs(func(tm *metav1.Time, c randfill.Continue) {
			*tm = metav1.Unix(c.Int63n(1<<32), 0)
		}).Fill(orig)
		orig.TypeMeta = metav1.TypeMeta{}
		delete(orig.Annotations, ConversionAnnotation)
		if len(orig.Annotations) == 0 {
			orig.Annotations = nil
		}
		hub := &v1beta1.DatabaseCluster{}
		if err := orig.DeepCopy().ConvertTo(hub); err != nil {
			t.Fatalf("ConvertTo: %v", err)
		}
		got := &DatabaseCluster{}
		if err := got.ConvertFrom(hub); err != nil {
			t.Fatalf("ConvertFrom: %v", err)
		}
		if !equality.Semantic.DeepEqual(orig, got) {
			t.Fatalf("round trip changed the object:\nbefore %+v\nafter  %+v", orig, got)
		}
	})
}
