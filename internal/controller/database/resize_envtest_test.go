package database_test

import (
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/api/v1beta1"
	"github.com/mooringhq/mooring/internal/controller/database"
	"github.com/mooringhq/mooring/internal/testutil"
)

// A storage grow the StorageClass cannot do (the API server's PersistentVolumeClaimResize
// admission refuses the PVC patch, Forbidden, which envtest's API server does too) no
// longer stops the reconcile: StorageResized=False/ResizeForbidden and one Warning event
// say why, the StatefulSet keeps its volume size and takes the rest of the spec, and
// reconciles that change nothing send nothing. Once the class allows expansion, a
// requested reconcile grows the volumes.
func TestStorageGrowthForbidden(t *testing.T) {
	ns := env.Namespace(t)
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "fixed-" + ns}, Provisioner: "example.com/fake"}
	if err := env.Client.Create(ctx, sc); err != nil {
		t.Fatal(err)
	}
	db := createDB(t, ns, "stuck", v1beta1.PostgreSQL, func(d *v1beta1.DatabaseCluster) {
		d.Spec.ReplicaCount = 1
		d.Spec.Storage.StorageClassName = ptr.To(sc.Name)
	})
	key := client.ObjectKeyFromObject(db)
	sts, pvc := createDataClaim(t, db)
	oldUID := sts.UID
	bindClaim(t, pvc, "1Gi")

	testutil.Update(t, env.Client, key, &v1beta1.DatabaseCluster{}, func(d *v1beta1.DatabaseCluster) {
		d.Spec.Storage.Size = ptr.To(resource.MustParse("2Gi"))
		d.Spec.ReplicaCount = 2
	})
	testutil.WaitFor(t, env.Client, key, &v1beta1.DatabaseCluster{}, "StorageResized=False ResizeForbidden naming the class", func(d *v1beta1.DatabaseCluster) error {
		c := condition(d, v1beta1.ConditionStorageResized)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1beta1.ReasonResizeForbidden || !strings.Contains(c.Message, sc.Name) {
			return fmt.Errorf("StorageResized %+v", c)
		}
		if d.Status.ObservedGeneration != d.Generation || d.Status.Phase == v1beta1.DatabaseError {
			return fmt.Errorf("observedGeneration %d of %d, phase %s", d.Status.ObservedGeneration, d.Generation, d.Status.Phase)
		}
		return nil
	})
	testutil.WaitEvent(t, env.Client, ns, corev1.EventTypeWarning, v1beta1.ReasonResizeForbidden, "stuck")
	testutil.WaitFor(t, env.Client, key, sts, "StatefulSet scaled to 2, same object, 1Gi template", func(s *appsv1.StatefulSet) error {
		size := s.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage]
		if *s.Spec.Replicas != 2 || s.UID != oldUID || size.String() != "1Gi" {
			return fmt.Errorf("replicas %d, re-created %v, template %s", *s.Spec.Replicas, s.UID != oldUID, size.String())
		}
		return nil
	})
	// Reconciles that change nothing neither send the refused patch again nor repeat the event.
	testutil.ExpectNoWrites(t, database.Component, 1, func() {
		testutil.Update(t, env.Client, key, &v1beta1.DatabaseCluster{}, func(d *v1beta1.DatabaseCluster) {
			d.Annotations = map[string]string{"example.com/touched": "yes"}
		})
	})

	// The class is changed to allow expansion and a reconcile requested: the PVC grows.
	testutil.Update(t, env.Client, client.ObjectKeyFromObject(sc), &storagev1.StorageClass{}, func(c *storagev1.StorageClass) {
		c.AllowVolumeExpansion = ptr.To(true)
	})
	testutil.Update(t, env.Client, key, &v1beta1.DatabaseCluster{}, func(d *v1beta1.DatabaseCluster) {
		d.Annotations = map[string]string{mooringv1.ReconcileRequestedAnnotation: "now"}
	})
	testutil.WaitFor(t, env.Client, client.ObjectKeyFromObject(pvc), &corev1.PersistentVolumeClaim{}, "PVC request grown to 2Gi", func(p *corev1.PersistentVolumeClaim) error {
		if got := p.Spec.Resources.Requests[corev1.ResourceStorage]; got.String() != "2Gi" {
			return fmt.Errorf("request %s", got.String())
		}
		return nil
	})
	testutil.WaitFor(t, env.Client, key, &v1beta1.DatabaseCluster{}, "StorageResized=False Resizing", func(d *v1beta1.DatabaseCluster) error {
		if c := condition(d, v1beta1.ConditionStorageResized); c == nil || c.Reason != v1beta1.ReasonResizing {
			return fmt.Errorf("StorageResized %+v", c)
		}
		return nil
	})
}
