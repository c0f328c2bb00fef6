package webhook

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
)

// +kubebuilder:webhook:path=/validate-mooring-dev-v1-cacheinstance,mutating=false,failurePolicy=fail,sideEffects=None,groups=mooring.dev,resources=cacheinstances,verbs=create;update,versions=v1,name=vcacheinstance-v1.mooring.dev,admissionReviewVersions=v1

// CacheInstanceValidator checks what the CacheInstance's schema cannot: that a new
// CacheInstance's name can name its children (cacheInstanceNameRule), and that spec.image
// is an image reference, as the App's spec.image is checked (validateImage).
type CacheInstanceValidator struct{}

// ValidateCreate checks a new CacheInstance.
func (v CacheInstanceValidator) ValidateCreate(ctx context.Context, c *mooringv1.CacheInstance) (admission.Warnings, error) {
	return v.ValidateUpdate(ctx, nil, c)
}

// ValidateUpdate checks a changed CacheInstance; old is nil on create. An image it
// already had is not refused again (a finalizer's removal must go through).
func (CacheInstanceValidator) ValidateUpdate(_ context.Context, old, c *mooringv1.CacheInstance) (admission.Warnings, error) {
	var errs field.ErrorList
	if old == nil {
		errs = append(errs, cacheInstanceNameRule.errors(c.Name)...)
	}
	if c.Spec.Image != "" && (old == nil || old.Spec.Image != c.Spec.Image) {
		errs = append(errs, validateImage(field.NewPath("spec", "image"), c.Spec.Image)...)
	}
	if len(errs) > 0 {
		return nil, apierrors.NewInvalid(mooringv1.GroupVersion.WithKind("CacheInstance").GroupKind(), c.Name, errs)
	}
	return nil, nil
}

// ValidateDelete allows every deletion.
func (CacheInstanceValidator) ValidateDelete(context.Context, *mooringv1.CacheInstance) (admission.Warnings, error) {
	return nil, nil
}
