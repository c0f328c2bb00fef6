package webhook

import (
	"context"

	"github.com/distribution/reference"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
)

// +kubebuilder:webhook:path=/validate-mooring-dev-v1-app,mutating=false,failurePolicy=fail,sideEffects=None,groups=mooring.dev,resources=apps,verbs=create;update,versions=v1,name=vapp-v1.mooring.dev,admissionReviewVersions=v1

// AppValidator checks what the App's schema cannot: that the image is a valid reference,
// and that the environment and resources make a valid container.
type AppValidator struct{}

// ValidateCreate checks a new App.
func (AppValidator) ValidateCreate(_ context.Context, app *mooringv1.App) (admission.Warnings, error) {
	return nil, validateApp(app)
}

// ValidateUpdate checks a changed App.
func (AppValidator) ValidateUpdate(_ context.Context, _, app *mooringv1.App) (admission.Warnings, error) {
	return nil, validateApp(app)
}

// ValidateDelete allows every deletion.
func (AppValidator) ValidateDelete(context.Context, *mooringv1.App) (admission.Warnings, error) {
	return nil, nil
}

func validateApp(app *mooringv1.App) error {
	var errs field.ErrorList
	if _, err := reference.ParseNormalizedNamed(app.Spec.Image); err != nil {
		errs = append(errs, field.Invalid(field.NewPath("spec", "image"), app.Spec.Image,
			"must be an image reference such as nginx:1.27 or registry.example.com/team/api@sha256:<digest>: "+err.Error()))
	}
	errs = append(errs, validateEnv(app.Spec.Env, field.NewPath("spec", "env"))...)
	errs = append(errs, validateResources(app.Spec.Resources, field.NewPath("spec", "resources"))...)
	if len(errs) > 0 {
		return apierrors.NewInvalid(mooringv1.GroupVersion.WithKind("App").GroupKind(), app.Name, errs)
	}
	return nil
}
