package webhook

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/internal/bindingenv"
)

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
