package webhook

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
)

// MaxAppReplicas is the most pods spec.replicas may ask for: the same bound as
// spec.autoscaling.maxReplicas (the CRD's maximum), so that an App scales by hand no
// further than its autoscaler could. CacheInstance (64) and DatabaseCluster have their
// own, in their schemas. A program embedding the webhook may change it before Setup.
var MaxAppReplicas int32 = 1000

// quantityBounds are the smallest and largest non-zero value a container's resource may
// have: below the floor a value is a unit mistake (memory "1m" is a thousandth of a byte,
// cpu "0.1m" rounds to nothing), above the ceiling no node has it, and the pods would stay
// Pending with the App "Rolling out" forever.
var quantityBounds = map[corev1.ResourceName]struct{ floor, ceiling resource.Quantity }{
	corev1.ResourceCPU:              {resource.MustParse("1m"), resource.MustParse("1024")},
	corev1.ResourceMemory:           {resource.MustParse("1Mi"), resource.MustParse("1Ti")},
	corev1.ResourceEphemeralStorage: {resource.MustParse("1Mi"), resource.MustParse("100Ti")},
}

// boundsErrors are the App's replicas and resource quantities outside what any cluster
// can run.
func boundsErrors(app *mooringv1.App) field.ErrorList {
	var errs field.ErrorList
	if r := app.Spec.Replicas; r != nil && *r > MaxAppReplicas {
		errs = append(errs, field.Invalid(field.NewPath("spec", "replicas"), *r,
			fmt.Sprintf("must be at most %d; for more pods, use spec.autoscaling", MaxAppReplicas)))
	}
	path := field.NewPath("spec", "resources")
	for _, l := range []struct {
		list corev1.ResourceList
		path *field.Path
	}{{app.Spec.Resources.Requests, path.Child("requests")}, {app.Spec.Resources.Limits, path.Child("limits")}} {
		for name, q := range l.list {
			b, ok := quantityBounds[name]
			if !ok || q.Sign() <= 0 {
				continue // zero is no request; a negative one the Deployment's dry run refuses
			}
			switch {
			case q.Cmp(b.floor) < 0:
				errs = append(errs, field.Invalid(l.path.Key(string(name)), q.String(),
					fmt.Sprintf("must be at least %s (or 0): %s is a unit mistake", b.floor.String(), q.String())))
			case q.Cmp(b.ceiling) > 0:
				errs = append(errs, field.Invalid(l.path.Key(string(name)), q.String(),
					fmt.Sprintf("must be at most %s: no node has that much, so the pods would never be scheduled", b.ceiling.String())))
			}
		}
	}
	return errs
}

// referenceErrors are the names in the App that can never resolve and that no child
// carries (so no dry run refuses them): a binding's service named with a "/" or in upper
// case. The Secrets and ConfigMaps of spec.env and spec.envFrom are names in the
// Deployment, which its dry run checks.
func referenceErrors(app *mooringv1.App) field.ErrorList {
	var errs field.ErrorList
	bindings := field.NewPath("spec", "bindings")
	for i, b := range app.Spec.Bindings {
		for _, msg := range validation.IsDNS1123Subdomain(b.Ref.Name) {
			errs = append(errs, field.Invalid(bindings.Index(i).Child("ref", "name"), b.Ref.Name,
				fmt.Sprintf("must be the name of a %s in the App's namespace: %s", b.Ref.Kind, msg)))
		}
	}
	return errs
}
