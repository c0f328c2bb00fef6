package app_test

import (
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/internal/controller/app"
	"github.com/mooringhq/mooring/internal/testutil"
)

// The manager's cache holds children trimmed to what Mooring reads (no pod template, no
// ConfigMap data of an App, no Service spec), so these edits are invisible in the cached
// copy but for its content hash: each must still be repaired, and a spec-hash annotation
// that was removed or forged must never be trusted (internal/engine/cachetrim.go).
func TestTrimmedChildrenAreStillRepaired(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		obj   client.Object // the child to edit, named like the App unless name says otherwise
		name  func(app string) string
		patch client.Patch
		// repaired says what is wrong with the child until it is repaired.
		repaired func(client.Object, string) error
	}{
		"a field removed from the pod template, spec hash left as it was": {
			obj:      &appsv1.Deployment{},
			patch:    jsonPatch(`[{"op":"remove","path":"/spec/template/metadata/annotations/mooring.dev~1config-checksum"}]`),
			repaired: configChecksum,
		},
		"the spec hash annotation removed": {
			obj:      &appsv1.Deployment{},
			patch:    jsonPatch(`[{"op":"remove","path":"/metadata/annotations/mooring.dev~1spec-hash"}]`),
			repaired: specHashIs,
		},
		"the spec hash annotation forged, with the image changed": {
			obj: &appsv1.Deployment{},
			patch: jsonPatch(`[{"op":"replace","path":"/metadata/annotations/mooring.dev~1spec-hash","value":"0123456789abcdef"},` +
				`{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"evil:latest"}]`),
			repaired: func(o client.Object, hash string) error {
				if err := specHashIs(o, hash); err != nil {
					return err
				}
				if got := image(o.(*appsv1.Deployment)); got != "nginx:1.27" {
					return fmt.Errorf("image %s, want nginx:1.27", got)
				}
				return nil
			},
		},
		"an App's config ConfigMap edited (its data is not cached)": {
			obj:   &corev1.ConfigMap{},
			name:  func(app string) string { return app + "-config" },
			patch: client.RawPatch(types.MergePatchType, []byte(`{"data":{"`+app.ConfigKey+`":"greeting=evil"}}`)),
			repaired: func(o client.Object, _ string) error {
				if got := o.(*corev1.ConfigMap).Data; len(got) != 1 || got[app.ConfigKey] != "greeting=hello" {
					return fmt.Errorf("data %v, want %s=greeting=hello", got, app.ConfigKey)
				}
				return nil
			},
		},
		"a Service's target port changed (its spec is not cached)": {
			obj:   &corev1.Service{},
			patch: jsonPatch(`[{"op":"replace","path":"/spec/ports/0/targetPort","value":9999}]`),
			repaired: func(o client.Object, _ string) error {
				if ports := o.(*corev1.Service).Spec.Ports; len(ports) != 1 || ports[0].TargetPort.IntVal != 8080 {
					return fmt.Errorf("ports %v, want one to 8080", ports)
				}
				return nil
			},
		},
	}
	ns := env.Namespace(t)
	i := 0
	for name, tc := range tests {
		appName := fmt.Sprintf("trimmed-%d", i)
		i++
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			a := createApp(t, ns, appName, func(a *mooringv1.App) {
				a.Spec.Config = "greeting=hello"
				a.Spec.Port = ptr.To[int32](8080)
			})
			childName := a.Name
			if tc.name != nil {
				childName = tc.name(a.Name)
			}
			key := types.NamespacedName{Namespace: ns, Name: childName}
			// Converged first: the status observed the generation, so the edit below is
			// the only reason left to write the child.
			testutil.WaitFor(t, env.Client, client.ObjectKeyFromObject(a), &mooringv1.App{}, "App reconciled", func(a *mooringv1.App) error {
				if a.Status.ObservedGeneration != a.Generation {
					return fmt.Errorf("observedGeneration %d, generation %d", a.Status.ObservedGeneration, a.Generation)
				}
				return nil
			})
			child := tc.obj.DeepCopyObject().(client.Object)
			if err := env.Client.Get(ctx, key, child); err != nil {
				t.Fatal(err)
			}
			hash := child.GetAnnotations()[mooringv1.SpecHashAnnotation]
			if hash == "" {
				t.Fatalf("%T %s has no %s annotation", child, childName, mooringv1.SpecHashAnnotation)
			}
			if err := tc.repaired(child, hash); err != nil {
				t.Fatalf("before the edit: %v", err)
			}
			if err := env.Client.Patch(ctx, child, tc.patch, client.FieldOwner("kubectl-edit")); err != nil {
				t.Fatal(err)
			}
			if tc.repaired(child, hash) == nil {
				t.Fatalf("the edit changed nothing the test checks")
			}
			testutil.WaitFor(t, env.Client, key, tc.obj.DeepCopyObject().(client.Object), "hand edit repaired", func(o client.Object) error {
				return tc.repaired(o, hash)
			})
		})
	}
}

func jsonPatch(p string) client.Patch { return client.RawPatch(types.JSONPatchType, []byte(p)) }

func configChecksum(o client.Object, _ string) error {
	if got := o.(*appsv1.Deployment).Spec.Template.Annotations[mooringv1.ConfigChecksumAnnotation]; got == "" {
		return fmt.Errorf("pod template without %s", mooringv1.ConfigChecksumAnnotation)
	}
	return nil
}

func specHashIs(o client.Object, hash string) error {
	if got := o.GetAnnotations()[mooringv1.SpecHashAnnotation]; got != hash {
		return fmt.Errorf("%s=%q, want %q", mooringv1.SpecHashAnnotation, got, hash)
	}
	return nil
}
