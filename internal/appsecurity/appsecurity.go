// Package appsecurity is the security of an App's pods: the pod and container security
// contexts Mooring gives the App's Deployment. The App builder (internal/controller/app)
// puts them on the Deployment, and the App webhook (internal/webhook, which the builder's
// package cannot be imported by) evaluates the same contexts against the namespace's Pod
// Security level, so what is admitted is what runs.
package appsecurity

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
)

// Container meets the restricted Pod Security Standard: no privilege escalation, every
// capability dropped, and the runtime's seccomp profile. The App cannot loosen the first
// (spec.securityContext is the pod's, which has no such field); a seccomp profile it names
// in spec.securityContext wins, so the container does not repeat RuntimeDefault then (a
// container's profile overrides the pod's). An App that opts out of running as non-root
// (RunsAsRoot) keeps the runtime's default capabilities: images written to start as root
// (nginx, httpd) switch user and bind low ports with them, and such a pod is outside the
// restricted standard already.
func Container(app *mooringv1.App) *corev1.SecurityContext {
	sc := &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		Privileged:               ptr.To(false),
	}
	if !RunsAsRoot(app) {
		sc.Capabilities = &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}
	}
	if app.Spec.SecurityContext == nil || app.Spec.SecurityContext.SeccompProfile == nil {
		sc.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
	}
	return sc
}

// RunsAsRoot reports whether the App's security context allows root: runAsNonRoot false,
// or runAsUser 0 without runAsNonRoot.
func RunsAsRoot(app *mooringv1.App) bool {
	sc := app.Spec.SecurityContext
	if sc == nil {
		return false
	}
	if sc.RunAsNonRoot != nil {
		return !*sc.RunAsNonRoot
	}
	return sc.RunAsUser != nil && *sc.RunAsUser == 0
}

// Pod is the App's own pod security context, with the restricted Pod Security Standard's
// defaults for what it leaves unset: the RuntimeDefault seccomp profile, and runAsNonRoot
// unless it sets runAsNonRoot itself or runs as user 0.
func Pod(app *mooringv1.App) *corev1.PodSecurityContext {
	sc := &corev1.PodSecurityContext{}
	if app.Spec.SecurityContext != nil {
		sc = app.Spec.SecurityContext.DeepCopy()
	}
	if sc.SeccompProfile == nil {
		sc.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
	}
	if sc.RunAsNonRoot == nil && (sc.RunAsUser == nil || *sc.RunAsUser != 0) {
		sc.RunAsNonRoot = ptr.To(true)
	}
	return sc
}
