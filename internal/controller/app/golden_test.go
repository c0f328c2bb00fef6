package app

import (
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/internal/controller/golden"
)

// Apps that use none of the optional fields must keep producing exactly the children they
// produced before those fields existed: the golden files were written by the builders of
// that time (commit "app: golden children of Apps without the optional fields") and are
// never rewritten by a change that adds a field. They were rewritten once on purpose, when
// every App's container started meeting the restricted Pod Security Standard (capabilities
// drop ALL, runAsNonRoot). "highly-available" was written before the availability defaults
// moved to package availability (shared with caches and databases), which must not change
// them.
func TestChildrenWithoutOptionalFieldsUnchanged(t *testing.T) {
	sample := &mooringv1.App{}
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "config", "samples", "mooring_v1_app.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(raw, sample); err != nil {
		t.Fatal(err)
	}
	sample.Namespace = "default"
	apps := map[string]*mooringv1.App{
		"sample":      sample,
		"image-only":  newApp(nil),
		"one-replica": newApp(func(a *mooringv1.App) { a.Spec.Replicas = ptr.To[int32](1) }),
		"everything-old": newApp(func(a *mooringv1.App) {
			a.Spec.Replicas = ptr.To[int32](5)
			a.Spec.Config = "level=debug"
			a.Spec.Port = ptr.To[int32](8080)
			a.Spec.Env = []corev1.EnvVar{{Name: "A", Value: "1"}}
			a.Spec.Resources = corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}
		}),
		"highly-available": newApp(func(a *mooringv1.App) {
			a.Spec.HighAvailability = ptr.To(true)
			a.Spec.Port = ptr.To[int32](8080)
		}),
	}
	for name, a := range apps {
		t.Run(name, func(t *testing.T) {
			golden.JSON(t, filepath.Join("testdata", name+".golden.json"), Children(a, Resolved{}))
		})
	}
}
