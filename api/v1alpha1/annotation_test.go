package v1alpha1

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/mooringhq/mooring/api/v1beta1"
)

// forged is what anyone who may update a DatabaseCluster could put in the annotation to
// write status past the status subresource: a credentials revision and fingerprints (which
// start or block a credentials rollout) and a storage size.
const forged = `{"secretName":"db-credentials","storageSize":"100Ti",` +
	`"credentials":{"revision":99,"hash":"forged","adminHash":"forged"}}`

// realStatus is the status Mooring wrote: what both versions must keep showing.
func realStatus() (*resource.Quantity, *v1beta1.DatabaseCredentialsStatus) {
	return ptr.To(resource.MustParse("5Gi")), &v1beta1.DatabaseCredentialsStatus{Revision: 2, Hash: "real", AdminHash: "admin"}
}

// Status comes from the object's own status, field by field, in both directions; what the
// annotation says of status lands nowhere, whichever version it was written in.
func TestForgedAnnotationNeverReachesStatus(t *testing.T) {
	size, creds := realStatus()

	t.Run("v1alpha1 to v1beta1", func(t *testing.T) {
		for name, status := range map[string]DatabaseClusterStatus{
			"with status": {StorageSize: size, Credentials: &DatabaseCredentialsStatus{Revision: 2, Hash: "real", AdminHash: "admin"}},
			"no status":   {},
		} {
			alpha := &DatabaseCluster{
				ObjectMeta: metav1.ObjectMeta{Name: "db", Annotations: map[string]string{ConversionAnnotation: forged}},
				Spec:       DatabaseClusterSpec{Engine: "postgresql", Replicas: 1},
				Status:     status,
			}
			hub := &v1beta1.DatabaseCluster{}
			if err := alpha.ConvertTo(hub); err != nil {
				t.Fatalf("%s: ConvertTo: %v", name, err)
			}
			want := &v1beta1.DatabaseCluster{}
			noAnnotation := alpha.DeepCopy()
			noAnnotation.Annotations = nil
			if err := noAnnotation.ConvertTo(want); err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(hub.Status, want.Status) {
				t.Errorf("%s: v1beta1 status = %+v, want %+v: the annotation wrote status", name, hub.Status, want.Status)
			}
			// Its spec field is taken; it stays for the validating webhook to refuse.
			if hub.Spec.SecretName != "db-credentials" || hub.Annotations[ConversionAnnotation] != forged {
				t.Errorf("%s: v1beta1 secretName %q, annotations %v; want db-credentials and the annotation kept", name, hub.Spec.SecretName, hub.Annotations)
			}
		}
	})

	t.Run("v1beta1 to v1alpha1 and back", func(t *testing.T) {
		// A v1beta1 client wrote the annotation on the stored object.
		hub := &v1beta1.DatabaseCluster{
			ObjectMeta: metav1.ObjectMeta{Name: "db", Annotations: map[string]string{ConversionAnnotation: forged}},
			Spec:       v1beta1.DatabaseClusterSpec{Engine: v1beta1.PostgreSQL, ReplicaCount: 1, SecretName: "db-credentials"},
			Status:     v1beta1.DatabaseClusterStatus{StorageSize: size, Credentials: creds},
		}
		alpha := &DatabaseCluster{}
		if err := alpha.ConvertFrom(hub.DeepCopy()); err != nil {
			t.Fatal(err)
		}
		if !alpha.Status.StorageSize.Equal(*size) || alpha.Status.Credentials == nil ||
			*alpha.Status.Credentials != (DatabaseCredentialsStatus{Revision: 2, Hash: "real", AdminHash: "admin"}) {
			t.Fatalf("v1alpha1 status = %+v, want the real storage size and credentials", alpha.Status)
		}
		back := &v1beta1.DatabaseCluster{}
		if err := alpha.ConvertTo(back); err != nil {
			t.Fatal(err)
		}
		if !back.Status.StorageSize.Equal(*size) || *back.Status.Credentials != *creds {
			t.Fatalf("v1beta1 status after the round trip = %+v, want the real storage size and credentials", back.Status)
		}
	})

	t.Run("old format", func(t *testing.T) {
		// Mooring once wrote status in the annotation, and an object stored as v1alpha1
		// then may still carry it: its spec fields are taken, its status fields are not,
		// even where v1alpha1's status has none.
		alpha := &DatabaseCluster{
			ObjectMeta: metav1.ObjectMeta{Name: "db", Annotations: map[string]string{ConversionAnnotation: `{"secretName":"db-own",` +
				`"deletionPolicy":"Delete","storage":{"size":"2Gi"},"storageSize":"2Gi","credentials":{"revision":2,"hash":"real"}}`}},
			Spec: DatabaseClusterSpec{Engine: "postgresql"},
		}
		hub := &v1beta1.DatabaseCluster{}
		if err := alpha.ConvertTo(hub); err != nil {
			t.Fatal(err)
		}
		if hub.Status.StorageSize != nil || hub.Status.Credentials != nil {
			t.Fatalf("v1beta1 status = %+v, want no storage size and no credentials: v1alpha1 status had none", hub.Status)
		}
		if hub.Spec.SecretName != "db-own" || hub.Spec.DeletionPolicy != v1beta1.DeletionDelete || hub.Spec.Storage.Size.String() != "2Gi" {
			t.Fatalf("v1beta1 spec = %+v, want the annotation's secretName, deletionPolicy and storage", hub.Spec)
		}
	})
}

// storageSize and credentials are status fields of v1alpha1 too: they convert field by
// field, with copies, and need no annotation.
func TestConvertStorageSizeAndCredentials(t *testing.T) {
	size, creds := realStatus()
	hub := &v1beta1.DatabaseCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "db"},
		Spec:       v1beta1.DatabaseClusterSpec{Engine: v1beta1.PostgreSQL, ReplicaCount: 1},
		Status:     v1beta1.DatabaseClusterStatus{StorageSize: size, Credentials: creds},
	}
	alpha := &DatabaseCluster{}
	if err := alpha.ConvertFrom(hub.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	if alpha.Annotations != nil {
		t.Fatalf("v1alpha1 annotations = %v, want none: status has fields of its own", alpha.Annotations)
	}
	if alpha.Status.StorageSize == nil || !alpha.Status.StorageSize.Equal(*size) || alpha.Status.Credentials == nil || alpha.Status.Credentials.Revision != 2 {
		t.Fatalf("v1alpha1 status = %+v, want storage size 5Gi and credentials revision 2", alpha.Status)
	}
	back := &v1beta1.DatabaseCluster{}
	if err := alpha.ConvertTo(back); err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(hub, back) {
		t.Fatalf("round trip changed the object:\nbefore %+v\nafter  %+v", hub, back)
	}
	alpha.Status.Credentials.Revision = 3
	alpha.Status.StorageSize.Add(resource.MustParse("1Gi"))
	if back.Status.Credentials.Revision != 2 || !back.Status.StorageSize.Equal(resource.MustParse("5Gi")) {
		t.Fatal("conversion shares status pointers between versions")
	}
}

// The annotation is read strictly: a JSON object of storage, secretName and deletionPolicy,
// each of its type. Anything else is named, in words, with no Go decoder text.
func TestCheckConversionAnnotation(t *testing.T) {
	for _, raw := range []string{
		`{}`,
		`{"secretName":"db-credentials","deletionPolicy":"Retain"}`,
		`{"storage":{"size":"10Gi","storageClassName":"fast"}}`,
		`{"storage":null,"secretName":null}`,
		`{"storage":{"size":5}}`,
		// Values are the validating webhook's to check, on the v1beta1 object.
		`{"deletionPolicy":"Sometimes","storage":{"size":"0"}}`,
	} {
		if err := CheckConversionAnnotation(raw); err != nil {
			t.Errorf("%s refused: %v", raw, err)
		}
	}
	for raw, want := range map[string]string{
		``:                                   "it is not JSON",
		`secretName: x`:                      "it is not JSON",
		`{"secretName":"x"} {}`:              "it is not JSON",
		`null`:                               "it is not a JSON object",
		`["secretName"]`:                     "it is not a JSON object",
		`"x"`:                                "it is not a JSON object",
		`{"secretName":5}`:                   "secretName must be a string",
		`{"deletionPolicy":{}}`:              "deletionPolicy must be a string",
		`{"storage":"10Gi"}`:                 "storage is not a JSON object",
		`{"storage":{"size":"ten"}}`:         `storage.size must be a quantity, such as "10Gi"`,
		`{"storage":{"size":true}}`:          `storage.size must be a quantity, such as "10Gi"`,
		`{"storage":{"storageClass":"x"}}`:   `"storage.storageClass" is not a field of storage`,
		`{"storage":{"storageClassName":1}}`: "storage.storageClassName must be a string",
		`{"SecretName":"x"}`:                 `"SecretName" is not a field it carries`,
		`{"replicaCount":3}`:                 `"replicaCount" is not a field it carries`,
		`{"status":{"phase":"Running"}}`:     `"status" is not a field it carries`,
		`{"storageSize":"100Ti"}`:            "storageSize is status: v1alpha1 has status.storageSize, which only the status subresource writes",
		forged:                               "credentials is status: v1alpha1 has status.credentials, which only the status subresource writes; storageSize is status",
	} {
		err := CheckConversionAnnotation(raw)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one saying %q", raw, err, want)
		}
		if err != nil && (strings.Contains(err.Error(), "unmarshal") || strings.Contains(err.Error(), "Go value")) {
			t.Errorf("%s: error %q has Go decoder text", raw, err)
		}
	}
}

// An annotation conversion cannot read fails neither direction (which would fail every
// read and write of the object with an InternalError): what cannot be read of it is
// ignored, and it travels unchanged, so that the validating webhook sees it in v1beta1 to
// refuse it.
func TestUnreadableAnnotationTravelsUnchanged(t *testing.T) {
	for raw, secretName := range map[string]string{`not json`: "", `{"secretName":5}`: "", forged: "db-credentials",
		`{"storage":{"size":"ten"}}`: "", `null`: "", `{"secretName":"db-credentials","replicas":3}`: "db-credentials"} {
		alpha := &DatabaseCluster{
			ObjectMeta: metav1.ObjectMeta{Name: "db", Annotations: map[string]string{ConversionAnnotation: raw, "team": "orders"}},
			Spec:       DatabaseClusterSpec{Engine: "mysql", Replicas: 2, Version: "8.4"},
		}
		hub := &v1beta1.DatabaseCluster{}
		if err := alpha.DeepCopy().ConvertTo(hub); err != nil {
			t.Fatalf("%s: ConvertTo failed: %v", raw, err)
		}
		if hub.Annotations[ConversionAnnotation] != raw || hub.Spec.ReplicaCount != 2 ||
			hub.Spec.SecretName != secretName || hub.Spec.DeletionPolicy != "" || hub.Spec.Storage.Size != nil {
			t.Errorf("%s: v1beta1 = %+v, annotations %v; want the annotation kept and secretName %q", raw, hub.Spec, hub.Annotations, secretName)
		}
		// The mutating webhook defaults secretName; the object goes back to v1alpha1 for
		// the validating webhook with the annotation as it came.
		hub.Spec.SecretName = "db-credentials"
		back := &DatabaseCluster{}
		if err := back.ConvertFrom(hub); err != nil {
			t.Fatalf("%s: ConvertFrom failed: %v", raw, err)
		}
		if !equality.Semantic.DeepEqual(alpha, back) {
			t.Errorf("%s: round trip changed the object:\nbefore %+v\nafter  %+v", raw, alpha, back)
		}
	}

	// A readable one a v1beta1 client wrote is replaced by what the v1beta1 object has.
	hub := &v1beta1.DatabaseCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Annotations: map[string]string{ConversionAnnotation: `{"secretName":"other"}`}},
		Spec:       v1beta1.DatabaseClusterSpec{Engine: v1beta1.PostgreSQL, SecretName: "db-credentials"},
	}
	alpha := &DatabaseCluster{}
	if err := alpha.ConvertFrom(hub); err != nil {
		t.Fatal(err)
	}
	if got := alpha.Annotations[ConversionAnnotation]; got != `{"secretName":"db-credentials"}` {
		t.Fatalf("v1alpha1 annotation = %s, want the v1beta1 object's own secretName", got)
	}
	hub.Spec.SecretName = ""
	if err := alpha.ConvertFrom(hub); err != nil || alpha.Annotations != nil {
		t.Fatalf("v1alpha1 annotations = %v (%v), want none: the v1beta1 object has no field for it", alpha.Annotations, err)
	}
}

// FuzzConversionAnnotation: whatever the annotation says, conversion succeeds, status
// comes from status alone, and an annotation conversion cannot read comes back unchanged.
func FuzzConversionAnnotation(f *testing.F) {
	for _, seed := range []string{forged, `{}`, `{"secretName":"x","deletionPolicy":"Delete","storage":{"size":"1Gi"}}`,
		`{"storage":{"storageClassName":null}}`, `{"credentials":{"revision":1}}`, `{"storageSize":"1Gi"}`, `[]`, `not json`} {
		f.Add(seed, []byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw string, data []byte) {
		alpha := fillSpoke(data)
		plain := alpha.DeepCopy()
		delete(plain.Annotations, ConversionAnnotation)
		if alpha.Annotations == nil {
			alpha.Annotations = map[string]string{}
		}
		alpha.Annotations[ConversionAnnotation] = raw

		hub, want := &v1beta1.DatabaseCluster{}, &v1beta1.DatabaseCluster{}
		if err := alpha.DeepCopy().ConvertTo(hub); err != nil {
			t.Fatalf("ConvertTo: %v", err)
		}
		if err := plain.ConvertTo(want); err != nil {
			t.Fatalf("ConvertTo: %v", err)
		}
		if !equality.Semantic.DeepEqual(hub.Status, want.Status) {
			t.Fatalf("annotation %q changed status:\nwith    %+v\nwithout %+v", raw, hub.Status, want.Status)
		}
		readable := CheckConversionAnnotation(raw) == nil
		if kept, found := hub.Annotations[ConversionAnnotation]; readable == found || (found && kept != raw) {
			t.Fatalf("annotation %q (readable %v) on the v1beta1 object: %q, %v", raw, readable, kept, found)
		}
		back := &DatabaseCluster{}
		if err := back.ConvertFrom(hub.DeepCopy()); err != nil {
			t.Fatalf("ConvertFrom: %v", err)
		}
		if !equality.Semantic.DeepEqual(back.Status, alpha.Status) {
			t.Fatalf("status changed on the way through v1beta1:\nbefore %+v\nafter  %+v", alpha.Status, back.Status)
		}
		if !readable && !equality.Semantic.DeepEqual(alpha, back) {
			t.Fatalf("unreadable annotation %q: round trip changed the object:\nbefore %+v\nafter  %+v", raw, alpha, back)
		}
	})
}
