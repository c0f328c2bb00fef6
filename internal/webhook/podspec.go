package webhook

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/internal/bindingenv"
)

// The container fields an App passes through to its Deployment unchanged. The API server
// would reject a Deployment with these errors only when Mooring applies it, long after the
// App was accepted; so they are checked here, with the App's own field paths.

// validateEnv rejects environment variables a pod cannot have: an empty name or one with
// '=', and a value set both literally and from a source, or from more than one source.
func validateEnv(env []corev1.EnvVar, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, e := range env {
		p := path.Index(i)
		if e.Name == "" || strings.Contains(e.Name, "=") {
			errs = append(errs, field.Invalid(p.Child("name"), e.Name, "must be a non-empty environment variable name without '='"))
		}
		if e.ValueFrom == nil {
			continue
		}
		if e.Value != "" {
			errs = append(errs, field.Invalid(p.Child("valueFrom"), "", "may not be set together with value"))
		}
		sources := 0
		for _, set := range []bool{e.ValueFrom.FieldRef != nil, e.ValueFrom.ResourceFieldRef != nil,
			e.ValueFrom.ConfigMapKeyRef != nil, e.ValueFrom.SecretKeyRef != nil, e.ValueFrom.FileKeyRef != nil} {
			if set {
				sources++
			}
		}
		if sources != 1 {
			errs = append(errs, field.Invalid(p.Child("valueFrom"), sources, "must set exactly one of fieldRef, resourceFieldRef, configMapKeyRef, secretKeyRef, fileKeyRef"))
		}
	}
	return errs
}

// validateResources rejects resource names that are not qualified names, negative
// quantities, and requests above their limits.
func validateResources(r corev1.ResourceRequirements, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	check := func(list corev1.ResourceList, p *field.Path) {
		for name, q := range list {
			if msgs := validation.IsQualifiedName(string(name)); len(msgs) > 0 {
				errs = append(errs, field.Invalid(p.Key(string(name)), string(name), strings.Join(msgs, "; ")))
			}
			if q.Sign() < 0 {
				errs = append(errs, field.Invalid(p.Key(string(name)), q.String(), "must not be negative"))
			}
		}
	}
	check(r.Requests, path.Child("requests"))
	check(r.Limits, path.Child("limits"))
	for name, req := range r.Requests {
		if limit, ok := r.Limits[name]; ok && req.Cmp(limit) > 0 {
			errs = append(errs, field.Invalid(path.Child("requests").Key(string(name)), req.String(),
				"must be less than or equal to the limit "+limit.String()))
		}
	}
	return errs
}

// bindingEnvErrors are the spec.env entries that set a variable an env binding sets too
// (binding "orders" to a DatabaseCluster: ORDERS_TYPE ... ORDERS_PASSWORD): the pod would
// have the name twice, and the literal would hide the binding's value. The names are the
// builders' (internal/bindingenv).
func bindingEnvErrors(app *mooringv1.App) field.ErrorList {
	set := map[string]int{}
	for i, e := range app.Spec.Env {
		if _, seen := set[e.Name]; !seen {
			set[e.Name] = i
		}
	}
	var errs field.ErrorList
	bindings := field.NewPath("spec", "bindings")
	for j, b := range app.Spec.Bindings {
		if !b.Env {
			continue
		}
		for _, name := range bindingenv.Names(b.Name, b.Ref.Kind) {
			if i, ok := set[name]; ok {
				errs = append(errs, field.Invalid(field.NewPath("spec", "env").Index(i).Child("name"), name, fmt.Sprintf(
					"is also set by %s (binding %q, env: true, sets %s*): remove it from spec.env, rename the binding, or set env: false and read %s/%s/",
					bindings.Index(j), b.Name, bindingenv.Prefix(b.Name), "/bindings", b.Name)))
			}
		}
	}
	return errs
}
