package webhook

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
)

// The App's pod is held to its namespace's enforced Pod Security level, unlabelled
// namespaces to restricted: root only under baseline or privileged, each refusal on the
// field that asks for it, naming the namespace's level.
func TestAppPodSecurityFollowsTheNamespaceLevel(t *testing.T) {
	ns := func(name, level string) client.Object {
		n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if level != "" {
			n.Labels = map[string]string{"pod-security.kubernetes.io/enforce": level}
		}
		return n
	}
	reader := fake.NewClientBuilder().WithObjects(ns("strict", "restricted"), ns("base", "baseline"),
		ns("open", "privileged"), ns("plain", ""), ns("typo", "privilegd")).Build()
	root := &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](0)}
	notNonRoot := &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(false)}
	localhost := &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("p.json")}}
	tests := []struct {
		ns   string
		sc   *corev1.PodSecurityContext
		want []string // nil to admit
	}{
		{ns: "strict", sc: nil},
		{ns: "strict", sc: localhost},
		{ns: "strict", sc: &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1000), FSGroup: ptr.To[int64](2000)}},
		{ns: "strict", sc: root, want: []string{
			"spec.securityContext.runAsUser: Forbidden: namespace strict enforces Pod Security level \"restricted\" (label pod-security.kubernetes.io/enforce=restricted), which forbids runAsUser=0",
			"spec.securityContext.runAsUser: Forbidden: namespace strict enforces Pod Security level \"restricted\" (label pod-security.kubernetes.io/enforce=restricted), which forbids unrestricted capabilities",
		}},
		{ns: "strict", sc: notNonRoot, want: []string{"spec.securityContext.runAsNonRoot: Forbidden:", "which forbids runAsNonRoot != true"}},
		{ns: "plain", sc: root, want: []string{"namespace plain has no pod-security.kubernetes.io/enforce label, which Mooring takes as Pod Security level \"restricted\""}},
		{ns: "typo", sc: root, want: []string{"Pod Security level \"restricted\" (label pod-security.kubernetes.io/enforce=privilegd)"}},
		{ns: "base", sc: root},
		{ns: "base", sc: notNonRoot},
		{ns: "open", sc: root},
	}
	for _, tt := range tests {
		app := &mooringv1.App{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: tt.ns},
			Spec: mooringv1.AppSpec{Image: "nginx:1.27", SecurityContext: tt.sc}}
		_, err := AppValidator{Reader: reader}.ValidateCreate(context.Background(), app)
		switch {
		case tt.want == nil && err != nil:
			t.Errorf("%s %+v: refused: %v", tt.ns, tt.sc, err)
		case tt.want != nil && err == nil:
			t.Errorf("%s %+v: admitted, want %q", tt.ns, tt.sc, tt.want)
		}
		for _, w := range tt.want {
			if err != nil && !strings.Contains(err.Error(), w) {
				t.Errorf("%s %+v: %v\ndoes not say %q", tt.ns, tt.sc, err, w)
			}
		}
	}

	// A root App stored before its namespace was labelled restricted takes unrelated edits.
	old := &mooringv1.App{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "strict"},
		Spec: mooringv1.AppSpec{Image: "nginx:1.27", SecurityContext: root}}
	bumped := old.DeepCopy()
	bumped.Spec.Image = "nginx:1.28"
	if _, err := (AppValidator{Reader: reader}).ValidateUpdate(context.Background(), old, bumped); err != nil {
		t.Errorf("an image bump of a root App in a restricted namespace: %v", err)
	}
}
