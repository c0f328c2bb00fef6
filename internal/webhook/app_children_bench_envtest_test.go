package webhook_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/internal/webhook"
)

// BenchmarkAppAdmission measures what the dry runs of an App's children add to its
// admission: the App validator on an App with all six core children (ConfigMap,
// Deployment, Service, PodDisruptionBudget, HorizontalPodAutoscaler, Ingress), with and
// without the dry runs, against the package's envtest API server. Run it with
//
//	KUBEBUILDER_ASSETS=$PWD/bin/k8s go test ./internal/webhook -run '^$' -bench AppAdmission -benchtime 200x
func BenchmarkAppAdmission(b *testing.B) {
	ns := env.Namespace(b)
	app := &mooringv1.App{
		ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: ns},
		Spec: mooringv1.AppSpec{
			Image: "nginx:1.27", Port: ptr.To[int32](8080), Config: "level=info", HighAvailability: ptr.To(true),
			Env:         []corev1.EnvVar{{Name: "LOG", Value: "json"}},
			Resources:   corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}},
			Autoscaling: &mooringv1.AppAutoscaling{MinReplicas: ptr.To[int32](2), MaxReplicas: 5},
			Expose:      &mooringv1.AppExpose{Host: "shop.example.com", TLS: &mooringv1.AppTLS{}},
		},
	}
	for name, v := range map[string]webhook.AppValidator{
		"without dry runs":  {Reader: env.Client, Reviewer: env.Client},
		"with the dry runs": {Reader: env.Client, Reviewer: env.Client, Children: env.Client},
	} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if _, err := v.ValidateCreate(ctx, app); err != nil {
					b.Fatalf("valid App refused: %v", err)
				}
			}
		})
	}
}
