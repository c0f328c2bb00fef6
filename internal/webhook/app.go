package webhook

import (
	"context"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
)

// +kubebuilder:webhook:path=/validate-mooring-dev-v1-app,mutating=false,failurePolicy=fail,sideEffects=None,groups=mooring.dev,resources=apps,verbs=create;update,versions=v1,name=vapp-v1.mooring.dev,admissionReviewVersions=v1

// AppValidator checks what the App's schema cannot: that a new App's name can name its
// children (appNameRule), that the image is a valid reference,
// that every child the App controller would build from it (its Deployment, Service,
// ConfigMap, Ingress, ...) is one the API server takes (childErrors), that the pod security
// context does not undo the restrictions Mooring's pods run with nor ask for more than the
// namespace's Pod Security level allows, and that the requesting user may read every
// Secret and ConfigMap the App's pods would read.
type AppValidator struct {
	// Reader looks up the namespace's Pod Security level and the services the bindings
	// name; Setup gives it the manager's API reader (no cache: labels and rights change).
	Reader client.Reader
	// Reviewer creates the SubjectAccessReviews for the requesting user.
	Reviewer Reviewer
	// Children creates the App's children with a server-side dry run (see childErrors);
	// Setup gives it the manager's client. Without it (a unit test with no API server) the
	// children are not checked.
	Children Creator
}

// ValidateCreate checks a new App.
func (v AppValidator) ValidateCreate(ctx context.Context, app *mooringv1.App) (admission.Warnings, error) {
	return v.ValidateUpdate(ctx, nil, app)
}

// ValidateUpdate checks a changed App; old is nil on create.
func (v AppValidator) ValidateUpdate(ctx context.Context, old, app *mooringv1.App) (admission.Warnings, error) {
	errs, err := v.requesterErrors(ctx, old, app)
	if err != nil {
		return nil, err
	}
	// What the schema and the App's own checks let through but its children would not
	// take: the API server's own validation of each child, by a dry run. The children are
	// built from the spec (and the name, which cannot change), so an update that leaves the
	// spec alone (a label, a finalizer) makes the same children, and the ratchet would
	// drop all their errors: no dry run then.
	// A name the children cannot carry (validateAppUpdate says why) would fail every dry
	// run on the name alone.
	if v.Children != nil && (old == nil || !equality.Semantic.DeepEqual(old.Spec, app.Spec)) &&
		(old != nil || len(appNameRule.errors(app.Name)) == 0) {
		errs = append(errs, ratchet(func(a *mooringv1.App) field.ErrorList { return childErrors(ctx, v.Children, a) }, app, old)...)
	}
	return appWarnings(app), validateAppUpdate(old, app, errs...)
}

// requesterErrors are what the App asks of Mooring that the request may not have: a
// Secret or ConfigMap the requesting user may not get, a pod security setting the
// namespace's Pod Security level forbids. On an update, only what the change adds.
func (v AppValidator) requesterErrors(ctx context.Context, old, app *mooringv1.App) (field.ErrorList, error) {
	errs, err := podSecurityErrors(ctx, v.Reader, old, app)
	if err != nil {
		return nil, err
	}
	var had []objectRef
	if old != nil {
		had = appReferences(old)
	}
	refs, err := resolveBindings(ctx, v.Reader, app.Namespace, newReferences(appReferences(app), had))
	if err != nil {
		return nil, err
	}
	denied, err := checkReferences(ctx, v.Reviewer, app.Namespace, refs)
	if err != nil {
		return nil, err
	}
	return append(errs, denied...), nil
}

// appWarnings are what the App may mean to do but will likely not work as written. They
// are warnings, not rejections: the cluster can make them work (a LimitRange's default
// request) in a way the webhook does not see.
func appWarnings(app *mooringv1.App) admission.Warnings {
	as := app.Spec.Autoscaling
	if as == nil {
		return nil
	}
	// A container's request defaults to its limit, so either one is enough.
	has := func(name corev1.ResourceName) bool {
		_, req := app.Spec.Resources.Requests[name]
		_, lim := app.Spec.Resources.Limits[name]
		return req || lim
	}
	var out admission.Warnings
	// The HorizontalPodAutoscaler targets CPU when spec.autoscaling names a CPU target, or
	// no target at all (the default 80%).
	if (as.TargetCPUUtilizationPercentage != nil || as.TargetMemoryUtilizationPercentage == nil) && !has(corev1.ResourceCPU) {
		out = append(out, "spec.resources.requests.cpu is not set: the CPU utilization target of spec.autoscaling "+
			"(targetCPUUtilizationPercentage, 80 when no target is set) is a share of it, so unless a LimitRange in the "+
			"namespace sets a default the HorizontalPodAutoscaler cannot scale (ScalingActive=False, the App's Autoscaling condition)")
	}
	if as.TargetMemoryUtilizationPercentage != nil && !has(corev1.ResourceMemory) {
		out = append(out, "spec.resources.requests.memory is not set: spec.autoscaling.targetMemoryUtilizationPercentage "+
			"is a share of it, so unless a LimitRange in the namespace sets a default the HorizontalPodAutoscaler cannot "+
			"scale (ScalingActive=False, the App's Autoscaling condition)")
	}
	return out
}

// ValidateDelete allows every deletion.
func (AppValidator) ValidateDelete(context.Context, *mooringv1.App) (admission.Warnings, error) {
	return nil, nil
}

// validateApp checks a new App's own fields.
func validateApp(app *mooringv1.App) error { return validateAppUpdate(nil, app) }

// validateAppUpdate checks app; on an update, old is the App before it (nil on create);
// more are errors found elsewhere.
// The checks added after Apps could be stored without them ratchet: what the baseline Pod
// Security Standard forbids, the binding variables, the bounds and the references here, and
// what the children would not take (ValidateUpdate's dry runs, passed in more). An App
// stored before they existed is not refused every change for a value it already had (its
// child has been failing, or its pods running, with it since), only for a new one.
func validateAppUpdate(old, app *mooringv1.App, more ...*field.Error) error {
	errs := append(field.ErrorList{}, more...)
	if old == nil {
		errs = append(errs, appNameRule.errors(app.Name)...)
	}
	errs = append(errs, validateImage(field.NewPath("spec", "image"), app.Spec.Image)...)
	errs = append(errs, validatePodSecurityContext(app.Spec.SecurityContext, field.NewPath("spec", "securityContext"))...)
	errs = append(errs, ratchet(baselineErrors, app, old)...)
	errs = append(errs, ratchet(bindingEnvErrors, app, old)...)
	errs = append(errs, ratchet(boundsErrors, app, old)...)
	errs = append(errs, ratchet(referenceErrors, app, old)...)
	if len(errs) > 0 {
		return apierrors.NewInvalid(mooringv1.GroupVersion.WithKind("App").GroupKind(), app.Name, errs)
	}
	return nil
}

// validatePodSecurityContext rejects what would run the App's pods with less isolation
// than Mooring's default (the restricted Pod Security Standard's seccomp rule, no host
// processes, no unsafe kernel settings) and settings that contradict each other.
func validatePodSecurityContext(sc *corev1.PodSecurityContext, path *field.Path) field.ErrorList {
	if sc == nil {
		return nil
	}
	var errs field.ErrorList
	if sc.SeccompProfile != nil && sc.SeccompProfile.Type == corev1.SeccompProfileTypeUnconfined {
		errs = append(errs, field.Forbidden(path.Child("seccompProfile", "type"),
			"Unconfined turns seccomp off; use RuntimeDefault or Localhost"))
	}
	if sc.RunAsNonRoot != nil && *sc.RunAsNonRoot && sc.RunAsUser != nil && *sc.RunAsUser == 0 {
		errs = append(errs, field.Invalid(path.Child("runAsUser"), *sc.RunAsUser,
			"runAsNonRoot is true, so the pods cannot run as user 0"))
	}
	if w := sc.WindowsOptions; w != nil && w.HostProcess != nil && *w.HostProcess {
		errs = append(errs, field.Forbidden(path.Child("windowsOptions", "hostProcess"), "host processes are not allowed"))
	}
	if len(sc.Sysctls) > 0 {
		errs = append(errs, field.Forbidden(path.Child("sysctls"), "kernel parameters are not set per App"))
	}
	return errs
}

// baselineSELinuxTypes are the SELinux types the baseline Pod Security Standard allows
// besides none: the container runtime's confined domains.
var baselineSELinuxTypes = []string{"container_t", "container_init_t", "container_kvm_t", "container_engine_t"}

// baselineErrors are the App's pod security settings the baseline Pod Security Standard
// forbids: a namespace enforcing it (or restricted) would refuse every pod of the App,
// and elsewhere they would run the pods outside the confinement Mooring promises.
func baselineErrors(app *mooringv1.App) field.ErrorList {
	sc := app.Spec.SecurityContext
	if sc == nil {
		return nil
	}
	path := field.NewPath("spec", "securityContext")
	var errs field.ErrorList
	if p := sc.AppArmorProfile; p != nil && p.Type == corev1.AppArmorProfileTypeUnconfined {
		errs = append(errs, field.Forbidden(path.Child("appArmorProfile", "type"),
			"Unconfined turns AppArmor off, which the baseline Pod Security Standard forbids; use RuntimeDefault or Localhost"))
	}
	if o := sc.SELinuxOptions; o != nil {
		p := path.Child("seLinuxOptions")
		if o.Type != "" && !slices.Contains(baselineSELinuxTypes, o.Type) {
			errs = append(errs, field.Invalid(p.Child("type"), o.Type,
				"must be empty or one of "+strings.Join(baselineSELinuxTypes, ", ")+" (the baseline Pod Security Standard): another type can leave the container's confinement"))
		}
		if o.User != "" {
			errs = append(errs, field.Forbidden(p.Child("user"), "the baseline Pod Security Standard forbids setting the SELinux user"))
		}
		if o.Role != "" {
			errs = append(errs, field.Forbidden(p.Child("role"), "the baseline Pod Security Standard forbids setting the SELinux role"))
		}
	}
	return errs
}

// ratchet is check's errors of app without those old already had: the same field, value
// and complaint. An App stored before a check existed keeps taking changes that do not
// touch what the check refuses.
func ratchet(check func(*mooringv1.App) field.ErrorList, app, old *mooringv1.App) field.ErrorList {
	errs := check(app)
	if old == nil || len(errs) == 0 {
		return errs
	}
	had := map[string]bool{}
	for _, e := range check(old) {
		had[e.Error()] = true
	}
	var out field.ErrorList
	for _, e := range errs {
		if !had[e.Error()] {
			out = append(out, e)
		}
	}
	return out
}
