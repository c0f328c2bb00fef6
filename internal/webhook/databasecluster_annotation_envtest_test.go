package webhook_test

import (
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/mooringhq/mooring/api/v1alpha1"
	"github.com/mooringhq/mooring/api/v1beta1"
	"github.com/mooringhq/mooring/internal/testutil"
)

// annotationField is how admission names the conversion annotation.
const annotationField = "metadata.annotations[mooring.dev/v1beta1-fields]"

// Anyone who may update a DatabaseCluster may write the v1alpha1 conversion annotation,
// but not status: status put in the annotation (a credentials revision and fingerprints,
// which start or block a credentials rollout; a storage size) is refused at admission,
// as is an annotation that cannot be read, with a 4xx naming it (never a conversion
// failure's InternalError); status stays what the controller wrote.
func TestDatabaseClusterConversionAnnotationCannotWriteStatus(t *testing.T) {
	ns := env.Namespace(t)
	key := createBeta(t, ns, "forged", func(*v1beta1.DatabaseCluster) {})
	stored := &v1beta1.DatabaseCluster{}
	testutil.WaitFor(t, env.Client, key, stored, "status.credentials", func(d *v1beta1.DatabaseCluster) error {
		if d.Status.Credentials == nil {
			return errors.New("no status.credentials yet")
		}
		return nil
	})
	want := *stored.Status.Credentials

	const forged = `{"secretName":"forged-credentials","deletionPolicy":"Retain","storage":{"size":"1Gi"},` +
		`"storageSize":"100Ti","credentials":{"revision":99,"hash":"forged","adminHash":"forged"}}`
	for raw, message := range map[string]string{
		forged:                "credentials is status: v1alpha1 has status.credentials, which only the status subresource writes",
		`{"storageSize":"1"}`: "storageSize is status: v1alpha1 has status.storageSize",
		`not json`:            "cannot be read: it is not JSON",
		`{"secretName":5}`:    "cannot be read: secretName must be a string",
		`{"secretName":"forged-credentials","SecretName":"other"}`: `"SecretName" is not a field it carries`,
	} {
		err := alphaWrite(key, raw)
		if apierrors.IsInternalError(err) {
			t.Fatalf("v1alpha1 write with annotation %s: InternalError %v", raw, err)
		}
		mustReject(t, err, annotationField, message)
	}
	alpha := &v1alpha1.DatabaseCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "created", Namespace: ns, Annotations: map[string]string{v1alpha1.ConversionAnnotation: forged}},
		Spec:       v1alpha1.DatabaseClusterSpec{Engine: "postgresql"},
	}
	mustReject(t, env.Client.Create(ctx, alpha), annotationField, "credentials is status")
	alpha.Annotations[v1alpha1.ConversionAnnotation] = `{"storage":`
	mustReject(t, env.Client.Create(ctx, alpha), annotationField, "cannot be read: it is not JSON")
	// In v1beta1 it means nothing: a v1beta1 client is told to remove it.
	mustReject(t, tryUpdate(key, func(d *v1beta1.DatabaseCluster) {
		d.Annotations = map[string]string{v1alpha1.ConversionAnnotation: `{"secretName":"forged-credentials"}`}
	}), annotationField, "remove the annotation")

	// The annotation as a v1alpha1 read returns it (spec only) is taken; status in the
	// body of a v1alpha1 write is ignored, as for any write past the status subresource.
	// Status keeps what v1alpha1 now has fields for, no longer in the annotation.
	got := &v1alpha1.DatabaseCluster{}
	if err := tryUpdateObj(key, got, func(a *v1alpha1.DatabaseCluster) {
		a.Spec.Replicas = 2
		a.Status.Credentials = &v1alpha1.DatabaseCredentialsStatus{Revision: 99, Hash: "forged", AdminHash: "forged"}
		a.Status.StorageSize = ptr.To(resource.MustParse("100Ti"))
	}); err != nil {
		t.Fatalf("v1alpha1 write with the annotation as read: %v", err)
	}
	if c := got.Status.Credentials; c == nil || c.Revision != want.Revision || c.Hash != want.Hash || c.AdminHash != want.AdminHash ||
		got.Status.StorageSize != nil {
		t.Fatalf("v1alpha1 status after the write: credentials %+v, storageSize %v; want %+v and none", c, got.Status.StorageSize, want)
	}
	beta := &v1beta1.DatabaseCluster{}
	if err := env.Client.Get(ctx, key, beta); err != nil {
		t.Fatal(err)
	}
	if c := beta.Status.Credentials; beta.Spec.ReplicaCount != 2 || c == nil || c.Revision != want.Revision || c.Hash != want.Hash ||
		beta.Status.StorageSize != nil {
		t.Fatalf("v1beta1 after the write: replicaCount %d, credentials %+v, storageSize %v; want 2, %+v and none",
			beta.Spec.ReplicaCount, c, beta.Status.StorageSize, want)
	}
	if _, leaked := beta.Annotations[v1alpha1.ConversionAnnotation]; leaked {
		t.Fatalf("conversion annotation stored on the v1beta1 object: %v", beta.Annotations)
	}
}
