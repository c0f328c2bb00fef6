package webhook

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
)

// A utilization target needs the matching request (or a limit, which it defaults to): the
// App is accepted, since a LimitRange may supply it, with a warning naming the field.
func TestAutoscalingWithoutRequestsWarns(t *testing.T) {
	q := resource.MustParse
	tests := map[string]struct {
		autoscaling *mooringv1.AppAutoscaling
		resources   corev1.ResourceRequirements
		want        []string // fields the warnings name, in order
	}{
		"default CPU target without a request": {
			autoscaling: &mooringv1.AppAutoscaling{MaxReplicas: 3},
			want:        []string{"spec.resources.requests.cpu"},
		},
		"CPU target with a request": {
			autoscaling: &mooringv1.AppAutoscaling{MaxReplicas: 3, TargetCPUUtilizationPercentage: ptr.To[int32](60)},
			resources:   corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q("100m")}},
		},
		"CPU target with only a limit, which the request defaults to": {
			autoscaling: &mooringv1.AppAutoscaling{MaxReplicas: 3},
			resources:   corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: q("1")}},
		},
		"memory target alone without a request": {
			autoscaling: &mooringv1.AppAutoscaling{MaxReplicas: 3, TargetMemoryUtilizationPercentage: ptr.To[int32](70)},
			resources:   corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q("100m")}},
			want:        []string{"spec.resources.requests.memory"},
		},
		"both targets without requests": {
			autoscaling: &mooringv1.AppAutoscaling{MaxReplicas: 3, TargetCPUUtilizationPercentage: ptr.To[int32](60), TargetMemoryUtilizationPercentage: ptr.To[int32](70)},
			want:        []string{"spec.resources.requests.cpu", "spec.resources.requests.memory"},
		},
		"no autoscaling": {},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			app := &mooringv1.App{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: mooringv1.AppSpec{
				Image: "nginx:1.27", Autoscaling: tt.autoscaling, Resources: tt.resources}}
			for verb, validate := range map[string]func() ([]string, error){
				"create": func() ([]string, error) { return AppValidator{}.ValidateCreate(context.Background(), app) },
				"update": func() ([]string, error) {
					return AppValidator{}.ValidateUpdate(context.Background(), app.DeepCopy(), app)
				},
			} {
				warnings, err := validate()
				if err != nil {
					t.Fatalf("%s: %v, want accepted", verb, err)
				}
				if len(warnings) != len(tt.want) {
					t.Fatalf("%s: warnings %q, want %d naming %v", verb, warnings, len(tt.want), tt.want)
				}
				for i, field := range tt.want {
					if !strings.HasPrefix(warnings[i], field+" ") {
						t.Errorf("%s: warning %q does not start with the field %s", verb, warnings[i], field)
					}
				}
			}
		})
	}
}
