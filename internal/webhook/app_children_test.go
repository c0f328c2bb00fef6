package webhook

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
)

// An App stored before the checks of its children's fields existed is not refused every
// change for a value it already had; a new bad value is refused.
func TestChildFieldChecksRatchet(t *testing.T) {
	app := func(path string, replicas int32) *mooringv1.App {
		return &mooringv1.App{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: mooringv1.AppSpec{
			Image: "nginx:1.27", Port: ptr.To[int32](80), Replicas: ptr.To(replicas), Expose: &mooringv1.AppExpose{Path: path}}}
	}
	stored := app("/a//b", 1)
	if err := validateApp(stored); err == nil || !strings.Contains(err.Error(), "spec.expose.path") {
		t.Fatalf("create with path /a//b: %v, want spec.expose.path rejected", err)
	}
	if err := validateAppUpdate(stored, app("/a//b", 3)); err != nil {
		t.Errorf("scaling an App whose path was stored before the check: %v, want accepted", err)
	}
	if err := validateAppUpdate(stored, app("/c//d", 1)); err == nil || !strings.Contains(err.Error(), "must not contain '//'") {
		t.Errorf("changing the path to another bad one: %v, want spec.expose.path rejected", err)
	}
	if err := validateAppUpdate(stored, app("/c", 1)); err != nil {
		t.Errorf("fixing the path: %v", err)
	}
}

// The baseline Pod Security Standard's checks ratchet the same way: an App stored with
// AppArmor Unconfined before they existed can still be scaled, not given a new violation.
func TestBaselineChecksRatchet(t *testing.T) {
	app := func(sc *corev1.PodSecurityContext, replicas int32) *mooringv1.App {
		return &mooringv1.App{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: mooringv1.AppSpec{
			Image: "nginx:1.27", Replicas: ptr.To(replicas), SecurityContext: sc}}
	}
	unconfined := func() *corev1.PodSecurityContext {
		return &corev1.PodSecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}}
	}
	stored := app(unconfined(), 1)
	if err := validateApp(stored); err == nil || !strings.Contains(err.Error(), "spec.securityContext.appArmorProfile.type") {
		t.Fatalf("create with AppArmor Unconfined: %v, want spec.securityContext.appArmorProfile.type rejected", err)
	}
	if err := validateAppUpdate(stored, app(unconfined(), 3)); err != nil {
		t.Errorf("scaling an App stored with AppArmor Unconfined: %v, want accepted", err)
	}
	withUser := unconfined()
	withUser.SELinuxOptions = &corev1.SELinuxOptions{User: "system_u"}
	if err := validateAppUpdate(stored, app(withUser, 1)); err == nil || !strings.Contains(err.Error(), "spec.securityContext.seLinuxOptions.user") ||
		strings.Contains(err.Error(), "appArmorProfile") {
		t.Errorf("adding an SELinux user: %v, want only spec.securityContext.seLinuxOptions.user rejected", err)
	}
}
