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
				continue // zero is no request; negative is validateResources'
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

// referenceErrors are the names in the App that can never resolve: a Secret or ConfigMap
// of spec.env or spec.envFrom that is not a valid object name (a '/', another namespace
// written as ns/name), a key that is not a valid ConfigMap or Secret key, and a binding
// whose service is not a valid object name. The API server would refuse the Deployment
// (or the lookup would never find anything); this names the App's field instead.
func referenceErrors(app *mooringv1.App) field.ErrorList {
	var errs field.ErrorList
	name := func(p *field.Path, kind, n string) {
		for _, msg := range validation.IsDNS1123Subdomain(n) {
			errs = append(errs, field.Invalid(p, n, fmt.Sprintf("must be the name of a %s in the App's namespace: %s", kind, msg)))
		}
	}
	key := func(p *field.Path, kind, k string) {
		for _, msg := range validation.IsConfigMapKey(k) {
			errs = append(errs, field.Invalid(p, k, fmt.Sprintf("must be a %s key: %s", kind, msg)))
		}
	}
	env := field.NewPath("spec", "env")
	for i, e := range app.Spec.Env {
		if e.ValueFrom == nil {
			continue
		}
		p := env.Index(i).Child("valueFrom")
		if s := e.ValueFrom.SecretKeyRef; s != nil {
			name(p.Child("secretKeyRef", "name"), "Secret", s.Name)
			key(p.Child("secretKeyRef", "key"), "Secret", s.Key)
		}
		if c := e.ValueFrom.ConfigMapKeyRef; c != nil {
			name(p.Child("configMapKeyRef", "name"), "ConfigMap", c.Name)
			key(p.Child("configMapKeyRef", "key"), "ConfigMap", c.Key)
		}
	}
	envFrom := field.NewPath("spec", "envFrom")
	for i, e := range app.Spec.EnvFrom {
		p := envFrom.Index(i)
		if s := e.SecretRef; s != nil {
			name(p.Child("secretRef", "name"), "Secret", s.Name)
		}
		if c := e.ConfigMapRef; c != nil {
			name(p.Child("configMapRef", "name"), "ConfigMap", c.Name)
		}
	}
	bindings := field.NewPath("spec", "bindings")
	for i, b := range app.Spec.Bindings {
		name(bindings.Index(i).Child("ref", "name"), b.Ref.Kind, b.Ref.Name)
	}
	return errs
}
