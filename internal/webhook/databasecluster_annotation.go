package webhook

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/mooringhq/mooring/api/v1alpha1"
	"github.com/mooringhq/mooring/api/v1beta1"
)

// validateConversionAnnotation refuses v1alpha1's conversion annotation on the v1beta1
// object this webhook sees (every request, v1alpha1's converted). Conversion removes an
// annotation it has read in full, so one still here either cannot be read (not a JSON
// object, a field of the wrong type, a field it does not carry: status above all, which
// only the status subresource writes) or was written by a v1beta1 client, on whose object
// it means nothing. Conversion cannot refuse it itself: a failed conversion is an
// InternalError, not the user's 4xx. On update only a new or changed annotation is
// refused, so that a cluster stored with one still takes its other changes (the removal
// of its finalizers among them).
func validateConversionAnnotation(old, db *v1beta1.DatabaseCluster) field.ErrorList {
	raw, found := db.Annotations[v1alpha1.ConversionAnnotation]
	if !found {
		return nil
	}
	if old != nil {
		if was, had := old.Annotations[v1alpha1.ConversionAnnotation]; had && was == raw {
			return nil
		}
	}
	path := field.NewPath("metadata", "annotations").Key(v1alpha1.ConversionAnnotation)
	if err := v1alpha1.CheckConversionAnnotation(raw); err != nil {
		return field.ErrorList{field.Invalid(path, field.OmitValueType{}, fmt.Sprintf(
			"cannot be read: %s. It carries, as a JSON object, the v1beta1 spec fields a v1alpha1 object has no field for "+
				"(storage, secretName and deletionPolicy), never status: keep it as a v1alpha1 read returns it, or change "+
				"those fields through v1beta1", err))}
	}
	return field.ErrorList{field.Forbidden(path, "carries v1beta1 spec fields for v1alpha1 objects, which have no field for them; "+
		"a v1beta1 object has the fields themselves (spec.storage, spec.secretName, spec.deletionPolicy): remove the annotation")}
}
