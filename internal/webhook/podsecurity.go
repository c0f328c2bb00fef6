package webhook

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/internal/appsecurity"
)

// Root and the rest of what the restricted Pod Security Standard forbids. Mooring creates
// an App's pods with its own rights: where the namespace enforces no Pod Security level,
// or a looser one than the user should have, an App asking for root would get root pods
// for a user who may not create pods at all. So the pod Mooring would build for the App
// (its security contexts, from internal/appsecurity, which the Deployment builder uses
// too) is evaluated with Kubernetes' own Pod Security checks (k8s.io/pod-security-admission)
// at the level the App's namespace enforces: label pod-security.kubernetes.io/enforce
// (and enforce-version). A namespace without the label is taken as restricted, whatever
// the cluster's default: Mooring cannot see the API server's admission configuration,
// and restricted is what its pods meet unless an App asks otherwise. baseline allows
// running as root (it forbids privileged containers, added capabilities, host namespaces
// and paths, ...), privileged allows all; Mooring's own rules (no Unconfined seccomp or
// AppArmor, no sysctls, no host processes) apply on top, whatever the level.

// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get

// podSecurity evaluates pods against the standard's checks at any level and version.
var podSecurity = func() policy.Evaluator {
	e, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		panic(fmt.Sprintf("pod security checks: %v", err))
	}
	return e
}()

// appContainerName is the App's container's name in its Deployment
// (internal/controller/app.ContainerName); it appears in the standard's details.
const appContainerName = "app"

// appPodSpec is what of the App's pod the Pod Security Standards look at: the pod and
// container security contexts the Deployment gets, its port and its volumes (one
// projected ConfigMap and Secret per binding). Nothing else of the pod is the App's to set.
func appPodSpec(app *mooringv1.App) *corev1.PodSpec {
	c := corev1.Container{Name: appContainerName, Image: app.Spec.Image, SecurityContext: appsecurity.Container(app)}
	if app.Spec.Port != nil {
		c.Ports = []corev1.ContainerPort{{ContainerPort: *app.Spec.Port, Protocol: corev1.ProtocolTCP}}
	}
	spec := &corev1.PodSpec{Containers: []corev1.Container{c}, SecurityContext: appsecurity.Pod(app),
		AutomountServiceAccountToken: ptr.To(false)}
	for _, b := range app.Spec.Bindings {
		spec.Volumes = append(spec.Volumes, corev1.Volume{Name: "binding-" + b.Name, VolumeSource: corev1.VolumeSource{
			Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ConfigMap: &corev1.ConfigMapProjection{}}, {Secret: &corev1.SecretProjection{}},
			}},
		}})
	}
	return spec
}

// violations are the checks of lv the App's pod fails, each as "reason (detail)".
func violations(lv api.LevelVersion, app *mooringv1.App) []policy.CheckResult {
	var out []policy.CheckResult
	for _, r := range podSecurity.EvaluatePod(lv, &metav1.ObjectMeta{}, appPodSpec(app)) {
		if !r.Allowed {
			out = append(out, r)
		}
	}
	return out
}

// newViolations are app's violations of lv that old (nil on create) did not have: an App
// stored before a namespace tightened its level is not refused every later change for
// the setting it has run with since (its new pods are refused by the API server's own
// Pod Security admission when the namespace enforces it).
func newViolations(lv api.LevelVersion, old, app *mooringv1.App) []policy.CheckResult {
	found := violations(lv, app)
	if old == nil || len(found) == 0 {
		return found
	}
	had := map[policy.CheckResult]bool{}
	for _, r := range violations(lv, old) {
		had[r] = true
	}
	var out []policy.CheckResult
	for _, r := range found {
		if !had[r] {
			out = append(out, r)
		}
	}
	return out
}

// podSecurityErrors refuses what the App's pod would newly violate at its namespace's
// enforced Pod Security level, each on the App field that asks for it. The namespace is
// read only when the App would violate restricted, the strictest level.
func podSecurityErrors(ctx context.Context, reader client.Reader, old, app *mooringv1.App) (field.ErrorList, error) {
	restricted := api.LevelVersion{Level: api.LevelRestricted, Version: api.LatestVersion()}
	if len(newViolations(restricted, old, app)) == 0 {
		return nil, nil
	}
	if reader == nil {
		return nil, errors.New("the App webhook has no reader to look up the namespace's Pod Security level with")
	}
	ns := &corev1.Namespace{}
	if err := reader.Get(ctx, client.ObjectKey{Name: app.Namespace}, ns); err != nil {
		return nil, fmt.Errorf("look up namespace %s for its Pod Security level: %w", app.Namespace, err)
	}
	// An unset or invalid label is restricted: the defaults, and the API server's own reading.
	p, _ := api.PolicyToEvaluate(ns.Labels, api.Policy{Enforce: restricted})
	level := fmt.Sprintf("namespace %s enforces Pod Security level %q (label %s=%s)",
		app.Namespace, p.Enforce.Level, api.EnforceLevelLabel, ns.Labels[api.EnforceLevelLabel])
	if _, ok := ns.Labels[api.EnforceLevelLabel]; !ok {
		level = fmt.Sprintf("namespace %s has no %s label, which Mooring takes as Pod Security level %q "+
			"(label the namespace baseline or privileged to allow this)", app.Namespace, api.EnforceLevelLabel, p.Enforce.Level)
	}
	var errs field.ErrorList
	for _, r := range newViolations(p.Enforce, old, app) {
		what := r.ForbiddenReason
		if r.ForbiddenDetail != "" {
			what += " (" + r.ForbiddenDetail + ")"
		}
		errs = append(errs, field.Forbidden(podSecurityField(r, app), level+", which forbids "+what))
	}
	return errs, nil
}

// podSecurityField is the App field that makes its pod fail check result r.
func podSecurityField(r policy.CheckResult, app *mooringv1.App) *field.Path {
	sc := field.NewPath("spec", "securityContext")
	switch reason := r.ForbiddenReason; {
	case reason == "runAsUser=0":
		return sc.Child("runAsUser")
	case reason == "runAsNonRoot != true", reason == "unrestricted capabilities":
		// The container keeps its capabilities, and the pod does not set runAsNonRoot,
		// only when the App asks for root (appsecurity.RunsAsRoot).
		if app.Spec.SecurityContext != nil && app.Spec.SecurityContext.RunAsNonRoot == nil {
			return sc.Child("runAsUser")
		}
		return sc.Child("runAsNonRoot")
	case reason == "seccompProfile":
		return sc.Child("seccompProfile")
	case reason == "seLinuxOptions":
		return sc.Child("seLinuxOptions")
	case strings.Contains(reason, "AppArmor"):
		return sc.Child("appArmorProfile")
	case reason == "forbidden sysctls":
		return sc.Child("sysctls")
	case reason == "hostProcess":
		return sc.Child("windowsOptions", "hostProcess")
	}
	return sc
}
