package manager

import (
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/internal/engine"
)

// Every cached child kind is trimmed: a kind added to a controller's Owned without a
// transform here would be cached whole again, silently.
func TestEveryChildKindIsTrimmed(t *testing.T) {
	transforms := childTransforms()
	for _, o := range ownedTypes() {
		found := false
		for k := range transforms {
			found = found || reflect.TypeOf(k) == reflect.TypeOf(o)
		}
		if !found {
			t.Errorf("%T is cached without a transform of its own: add it to childTransforms", o)
		}
	}
	opts := CacheOptions()
	for o, by := range opts.ByObject {
		if by.Transform == nil {
			t.Errorf("%T has no transform in CacheOptions", o)
		}
	}
}

// What the controllers read of a cached child survives its transform; the rest, the pod
// template above all, is gone, summed up in the content hash.
func TestTransformsKeepWhatIsRead(t *testing.T) {
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: map[string]string{"a": "b"}},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](3), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app", Image: "nginx", Env: []corev1.EnvVar{{Name: "A", Value: "1"}}}},
			Volumes: []corev1.Volume{
				{Name: "binding-db", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
					{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "db-binding"}, Items: []corev1.KeyToPath{{Key: "k", Path: "p"}}}},
					{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "db-credentials"}}},
				}}}},
				{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "web-config"}}}},
			}}}},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 4, AvailableReplicas: 2, Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing}}},
	}
	out, err := transformOf(childTransforms(), d)(d.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*appsv1.Deployment)
	wantVolumes := []corev1.Volume{{Name: "binding-db", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
		{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "db-binding"}}}}}}}}
	switch {
	case got.Spec.Template.Spec.Containers != nil:
		t.Errorf("containers kept: %v", got.Spec.Template.Spec.Containers)
	case *got.Spec.Replicas != 3 || got.Labels["a"] != "b":
		t.Errorf("replicas %v labels %v", got.Spec.Replicas, got.Labels)
	case !reflect.DeepEqual(got.Spec.Template.Spec.Volumes, wantVolumes):
		t.Errorf("volumes %+v, want %+v", got.Spec.Template.Spec.Volumes, wantVolumes)
	case got.Status.ObservedGeneration != 4 || got.Status.AvailableReplicas != 2 || len(got.Status.Conditions) != 1:
		t.Errorf("status %+v", got.Status)
	case got.Annotations[engine.ContentHashAnnotation] == "":
		t.Error("no content hash")
	}

	configMaps := map[string]bool{mooringv1.AppComponent: false, mooringv1.CacheInstanceComponent: true}
	for component, keep := range configMaps {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{mooringv1.ComponentLabel: component}},
			Data: map[string]string{"host": "x"}}
		out, err := transformOf(childTransforms(), cm)(cm)
		if err != nil {
			t.Fatal(err)
		}
		if kept := out.(*corev1.ConfigMap).Data != nil; kept != keep {
			t.Errorf("ConfigMap of component %s: data kept %v, want %v", component, kept, keep)
		}
	}
}
