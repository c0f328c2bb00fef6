package webhook

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// databaseResources checks spec.resources of a DatabaseCluster as the API server checks
// a container's (an App's go through a dry run of its Deployment; a cluster's StatefulSet
// is built only in the controller): no negative quantity, and no request above its limit,
// with the API server's own words ("must be less than or equal to memory limit of 1Gi").
// Without the check the StatefulSet would be refused at every reconcile instead.
func databaseResources(path *field.Path, r *corev1.ResourceRequirements) field.ErrorList {
	if r == nil {
		return nil
	}
	var errs field.ErrorList
	for _, part := range []struct {
		name string
		list corev1.ResourceList
	}{{"limits", r.Limits}, {"requests", r.Requests}} {
		for _, name := range sortedResourceNames(part.list) {
			if q := part.list[name]; q.Sign() < 0 {
				errs = append(errs, field.Invalid(path.Child(part.name).Key(string(name)), q.String(), "must be greater than or equal to 0"))
			}
		}
	}
	for _, name := range sortedResourceNames(r.Requests) {
		req := r.Requests[name]
		if lim, ok := r.Limits[name]; ok && req.Cmp(lim) > 0 {
			errs = append(errs, field.Invalid(path.Child("requests"), req.String(),
				fmt.Sprintf("must be less than or equal to %s limit of %s", name, lim.String())))
		}
	}
	if len(r.Claims) > 0 {
		errs = append(errs, field.Forbidden(path.Child("claims"), "a database container takes no resource claims"))
	}
	return errs
}

func sortedResourceNames(l corev1.ResourceList) []corev1.ResourceName {
	names := make([]corev1.ResourceName, 0, len(l))
	for n := range l {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
