package engine

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
)

func deployment() *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "uid-1", ResourceVersion: "7",
			Annotations:   map[string]string{mooringv1.SpecHashAnnotation: "00000000000000aa", lastAppliedAnnotation: "{}"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: FieldOwner}}},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}}}},
		Status: appsv1.DeploymentStatus{Replicas: 2},
	}
}

// The content hash follows the spec and nothing else: a status or metadata write (the
// Deployment controller's, a label) must not cost a read, any spec change must.
func TestContentHashFollowsTheSpecOnly(t *testing.T) {
	base, err := ContentHash(deployment())
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		change  func(*appsv1.Deployment)
		changed bool
	}{
		"status":              {func(d *appsv1.Deployment) { d.Status.AvailableReplicas = 2 }, false},
		"labels":              {func(d *appsv1.Deployment) { d.Labels = map[string]string{"a": "b"} }, false},
		"resourceVersion":     {func(d *appsv1.Deployment) { d.ResourceVersion = "8" }, false},
		"image":               {func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "evil" }, true},
		"replicas":            {func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](3) }, true},
		"a field removed":     {func(d *appsv1.Deployment) { d.Spec.Replicas = nil }, true},
		"a template label":    {func(d *appsv1.Deployment) { d.Spec.Template.Labels = map[string]string{"a": "b"} }, true},
		"a container removed": {func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers = nil }, true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			d := deployment()
			tc.change(d)
			got, err := ContentHash(d)
			if err != nil {
				t.Fatal(err)
			}
			if (got != base) != tc.changed {
				t.Errorf("hash changed: %v, want %v", got != base, tc.changed)
			}
		})
	}
}

// Trim records the hash of what it drops, and drops it.
func TestTrimKeepsTheHashOfWhatItDrops(t *testing.T) {
	d := deployment()
	want, err := ContentHash(d)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Trim(KeepStatus[*appsv1.Deployment])(d)
	if err != nil {
		t.Fatal(err)
	}
	trimmed := out.(*appsv1.Deployment)
	got, ok := cachedContentHash(trimmed)
	switch {
	case !ok || got != want:
		t.Errorf("content hash %x (found %v), want %x", got, ok, want)
	case trimmed.Spec.Template.Spec.Containers != nil || trimmed.Spec.Replicas != nil:
		t.Errorf("spec kept: %+v", trimmed.Spec)
	case trimmed.Status.Replicas != 2:
		t.Errorf("status dropped: %+v", trimmed.Status)
	case trimmed.ManagedFields != nil || trimmed.Annotations[lastAppliedAnnotation] != "":
		t.Errorf("managedFields %v, annotations %v", trimmed.ManagedFields, trimmed.Annotations)
	case trimmed.Annotations[mooringv1.SpecHashAnnotation] != "00000000000000aa" || trimmed.UID != "uid-1":
		t.Errorf("metadata lost: %+v", trimmed.ObjectMeta)
	}
}

// A trimmed child is trusted only in the exact state remembered for the desired object
// of that spec hash: an edit, a removed or forged spec hash, or a desired object that
// changed since (with its hash forged onto the child) all need a read.
func TestTrustHoldsOnlyForTheRememberedState(t *testing.T) {
	const hash, next = "00000000000000aa", "00000000000000bb"
	trimmedCopy := func(change func(*appsv1.Deployment)) *appsv1.Deployment {
		d := deployment()
		if change != nil {
			change(d)
		}
		out, err := Trim(KeepStatus[*appsv1.Deployment])(d)
		if err != nil {
			t.Fatal(err)
		}
		return out.(*appsv1.Deployment)
	}
	tr := newTrust()
	if tr.holds(trimmedCopy(nil), hash) {
		t.Fatal("trusted before anything was remembered (a process that has just started)")
	}
	tr.remember(deployment(), hash)
	tests := map[string]struct {
		cached  *appsv1.Deployment
		desired string
		want    bool
	}{
		"unchanged":                     {trimmedCopy(nil), hash, true},
		"status changed":                {trimmedCopy(func(d *appsv1.Deployment) { d.Status.ReadyReplicas = 1 }), hash, true},
		"image edited":                  {trimmedCopy(func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "evil" }), hash, false},
		"spec hash removed":             {trimmedCopy(func(d *appsv1.Deployment) { delete(d.Annotations, mooringv1.SpecHashAnnotation) }), hash, false},
		"spec hash forged":              {trimmedCopy(func(d *appsv1.Deployment) { d.Annotations[mooringv1.SpecHashAnnotation] = "0123" }), hash, false},
		"desired changed, hash forged":  {trimmedCopy(func(d *appsv1.Deployment) { d.Annotations[mooringv1.SpecHashAnnotation] = next }), next, false},
		"another child of the same UID": {trimmedCopy(func(d *appsv1.Deployment) { d.UID = "uid-2" }), hash, false},
		"untrimmed (no content hash)":   {deployment(), hash, false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := tr.holds(tc.cached, tc.desired); got != tc.want {
				t.Errorf("holds = %v, want %v", got, tc.want)
			}
		})
	}
	tr.forget("uid-1")
	if tr.holds(trimmedCopy(nil), hash) {
		t.Error("trusted after forget (the child was deleted)")
	}
}
