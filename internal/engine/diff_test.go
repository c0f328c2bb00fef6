package engine

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

func TestIsSubset(t *testing.T) {
	tests := map[string]struct {
		want, have any
		subset     bool
	}{
		"equal scalars":           {want: "a", have: "a", subset: true},
		"different scalars":       {want: "a", have: "b", subset: false},
		"extra field in live":     {want: map[string]any{"a": int64(1)}, have: map[string]any{"a": int64(1), "b": "x"}, subset: true},
		"missing field in live":   {want: map[string]any{"a": int64(1)}, have: map[string]any{}, subset: false},
		"changed nested field":    {want: map[string]any{"a": map[string]any{"b": "x"}}, have: map[string]any{"a": map[string]any{"b": "y"}}, subset: false},
		"empty map absent":        {want: map[string]any{"r": map[string]any{}}, have: map[string]any{}, subset: true},
		"list same":               {want: []any{"a", "b"}, have: []any{"a", "b"}, subset: true},
		"list reordered":          {want: []any{"a", "b"}, have: []any{"b", "a"}, subset: false},
		"list element removed":    {want: []any{"a", "b"}, have: []any{"a"}, subset: false},
		"list element defaulted":  {want: []any{map[string]any{"port": int64(80)}}, have: []any{map[string]any{"port": int64(80), "protocol": "TCP"}}, subset: true},
		"type mismatch map/value": {want: map[string]any{"a": "x"}, have: "x", subset: false},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if got := isSubset(tt.want, tt.have); got != tt.subset {
				t.Errorf("isSubset(%v, %v) = %v, want %v", tt.want, tt.have, got, tt.subset)
			}
		})
	}
}

// A live Deployment as the API server returns it (defaults filled in) must still count as
// matching the desired one, or every resync would write.
func TestApplyMapMatchesDefaultedLiveObject(t *testing.T) {
	desired := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", Labels: map[string]string{"a": "b"}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"a": "b"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx"}}},
			},
		},
	}
	want, err := toApplyMap(desired)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := want["status"]; ok {
		t.Fatalf("apply map keeps status: %v", want)
	}
	live := desired.DeepCopy()
	live.ResourceVersion = "42"
	live.CreationTimestamp = metav1.Now()
	live.Spec.Template.Spec.Containers[0].TerminationMessagePath = "/dev/termination-log"
	live.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
	live.Status.Replicas = 2
	have, err := runtime.DefaultUnstructuredConverter.ToUnstructured(live)
	if err != nil {
		t.Fatal(err)
	}
	if !isSubset(want, have) {
		t.Fatalf("defaulted live object does not match desired:\nwant %v\nhave %v", want, have)
	}
	live.Spec.Template.Spec.Containers[0].Image = "httpd"
	have, _ = runtime.DefaultUnstructuredConverter.ToUnstructured(live)
	if isSubset(want, have) {
		t.Fatal("a changed image still matches desired")
	}
}

func TestSpecHashStable(t *testing.T) {
	a := map[string]any{"x": int64(1), "y": map[string]any{"b": "2", "a": "1"}}
	b := map[string]any{"y": map[string]any{"a": "1", "b": "2"}, "x": int64(1)}
	ha, _ := specHash(a)
	hb, _ := specHash(b)
	if ha != hb {
		t.Fatalf("equal maps hash differently: %s vs %s", ha, hb)
	}
	b["x"] = int64(2)
	if hc, _ := specHash(b); hc == ha {
		t.Fatal("different maps hash equally")
	}
}
