package webhook

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/mooringhq/mooring/api/v1beta1"
)

// TestDatabaseResourcesAtAdmission: a request above its limit is refused naming the
// field, as the API server would refuse the StatefulSet; sensible resources pass.
func TestDatabaseResourcesAtAdmission(t *testing.T) {
	q := resource.MustParse
	tests := map[string]struct {
		r    corev1.ResourceRequirements
		want []string // substrings of the error; none to allow
	}{
		"requests within limits": {r: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: q("250m"), corev1.ResourceMemory: q("1Gi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: q("1Gi")}}},
		"only requests": {r: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: q("8Gi")}}},
		"memory request above limit": {r: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceMemory: q("2Gi")}, Limits: corev1.ResourceList{corev1.ResourceMemory: q("1Gi")}},
			want: []string{"spec.resources.requests", "must be less than or equal to memory limit of 1Gi"}},
		"cpu request above limit": {r: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: q("2")}, Limits: corev1.ResourceList{corev1.ResourceCPU: q("500m")}},
			want: []string{"spec.resources.requests", "must be less than or equal to cpu limit of 500m"}},
		"negative limit": {r: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: q("-1Gi")}},
			want: []string{"spec.resources.limits[memory]", "must be greater than or equal to 0"}},
		"a claim": {r: corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "gpu"}}},
			want: []string{"spec.resources.claims"}},
	}
	// The credentials Secret is not there yet: the lookups of spec.secretName find
	// nothing to refuse, and only the resources decide.
	reader := fake.NewClientBuilder().WithScheme(bootstrapScheme(t)).Build()
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			db := cluster(v1beta1.PostgreSQL, "18")
			db.Spec.Resources = &tc.r
			_, err := (DatabaseClusterValidator{Reader: reader, Reviewer: allowAll}).ValidateCreate(asUser("alice"), db)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted, want an error with %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
	// An update that leaves stored resources alone is not checked again.
	old := cluster(v1beta1.PostgreSQL, "18")
	old.Spec.Resources = &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: q("2Gi")}, Limits: corev1.ResourceList{corev1.ResourceMemory: q("1Gi")}}
	updated := old.DeepCopy()
	updated.Finalizers = nil
	if _, err := (DatabaseClusterValidator{}).ValidateUpdate(context.Background(), old, updated); err != nil {
		t.Errorf("an update leaving spec.resources alone refused: %v", err)
	}
}
