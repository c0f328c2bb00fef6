package v1alpha1

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
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

// spec.bootstrap and the instances' status are in both versions: they convert field by
// field, not through the annotation, and a MariaDB cluster keeps its engine.
func TestConvertBootstrapAndInstances(t *testing.T) {
	restored := metav1.Unix(1700000000, 0)
	hub := &v1beta1.DatabaseCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "db"},
		Spec: v1beta1.DatabaseClusterSpec{Engine: v1beta1.MariaDB, ReplicaCount: 2, Version: "11.8",
			Bootstrap: &v1beta1.BootstrapSpec{Backup: &v1beta1.BootstrapBackup{Name: "nightly", Dump: "nightly-20250101030000.sql.gz"}}},
		Status: v1beta1.DatabaseClusterStatus{
			Instances: []v1beta1.InstanceStatus{
				{Name: "db-0", Role: v1beta1.RolePrimary, Ready: true, Position: "0-1-42"},
				{Name: "db-1", Role: v1beta1.RoleReplica, GTIDGap: ptr.To[int64](3), Position: "0-1-39", Message: "replication broke"},
			},
			RestoredFrom: &v1beta1.RestoredFromStatus{Backup: "nightly", Dump: "nightly-20250101030000.sql.gz", Time: &restored},
		},
	}
	alpha := &DatabaseCluster{}
	if err := alpha.ConvertFrom(hub.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	if alpha.Spec.Engine != "mariadb" || alpha.Spec.Bootstrap == nil || alpha.Spec.Bootstrap.Backup == nil ||
		*alpha.Spec.Bootstrap.Backup != (BootstrapBackup{Name: "nightly", Dump: "nightly-20250101030000.sql.gz"}) {
		t.Fatalf("v1alpha1 spec = %+v, want mariadb bootstrapped from nightly's dump", alpha.Spec)
	}
	if len(alpha.Status.Instances) != 2 || alpha.Status.Instances[1].Role != "replica" || *alpha.Status.Instances[1].GTIDGap != 3 ||
		alpha.Status.RestoredFrom == nil || alpha.Status.RestoredFrom.Backup != "nightly" {
		t.Fatalf("v1alpha1 status = %+v, want both instances and restoredFrom", alpha.Status)
	}
	if alpha.Annotations != nil {
		t.Fatalf("v1alpha1 annotations = %v, want none: bootstrap and instances have fields of their own", alpha.Annotations)
	}
	back := &v1beta1.DatabaseCluster{}
	if err := alpha.ConvertTo(back); err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(hub, back) {
		t.Fatalf("round trip changed the object:\nbefore %+v\nafter  %+v", hub, back)
	}
	// The copies share nothing with their source.
	*alpha.Status.Instances[1].GTIDGap = 4
	alpha.Status.RestoredFrom.Time.Time = alpha.Status.RestoredFrom.Time.Add(1)
	if *hub.Status.Instances[1].GTIDGap != 3 || !back.Status.RestoredFrom.Time.Equal(&restored) {
		t.Fatal("conversion shares pointers between versions")
	}
}

// fill makes a random v1beta1 DatabaseCluster from fuzz input, without the conversion
// annotation.
func fill(data []byte) *v1beta1.DatabaseCluster {
	obj := &v1beta1.DatabaseCluster{}
	filler(data).Fill(obj)
	obj.TypeMeta = metav1.TypeMeta{}
	delete(obj.Annotations, ConversionAnnotation)
	if len(obj.Annotations) == 0 {
		obj.Annotations = nil
	}
	return obj
}

// filler fills objects from fuzz input. Quantities are filled as real quantities: random
// bytes in their private fields are not objects a client can make.
func filler(data []byte) *randfill.Filler {
	return randfill.NewFromGoFuzz(data).NilChance(0.3).Funcs(
		func(q *resource.Quantity, c randfill.Continue) {
			*q = *resource.NewQuantity(c.Int63n(1<<40), resource.BinarySI)
		},
		func(tm *metav1.Time, c randfill.Continue) {
			*tm = metav1.Unix(c.Int63n(1<<32), 0)
		},
	)
}

// fillSpoke makes a random v1alpha1 DatabaseCluster from fuzz input, its annotations as
// filled (the conversion annotation among them only by chance).
func fillSpoke(data []byte) *DatabaseCluster {
	obj := &DatabaseCluster{}
	filler(data).Fill(obj)
	obj.TypeMeta = metav1.TypeMeta{}
	return obj
}

// FuzzHubRoundTrip proves v1beta1 → v1alpha1 → v1beta1 lossless. `go test` runs the seed
// corpus; `go test -fuzz FuzzHubRoundTrip ./api/v1alpha1` explores further.
func FuzzHubRoundTrip(f *testing.F) {
	for _, seed := range []string{"", "a", "mooring", "database cluster with storage",
		"mariadb bootstrapped from a backup dump", "instances: primary and replicas with lag", "\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09"} {
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
	for _, seed := range []string{"", "b", "replicas", "bootstrap.backup.dump", "restoredFrom and instances", "\xff\xfe\xfd\xfc\xfb\xfa\xf9\xf8"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		orig := fillSpoke(data)
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
