package webhook_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/api/v1beta1"
	"github.com/mooringhq/mooring/internal/devenv"
	"github.com/mooringhq/mooring/internal/testutil"
)

var userRoles sync.Once

// developer is a new user bound, in namespace ns, to the shipped mooring-developer role
// (config/default's user roles, installed once) and to the extra rules, if any.
func developer(t *testing.T, name, ns string, extra ...rbacv1.PolicyRule) testutil.User {
	t.Helper()
	ctx := context.Background()
	userRoles.Do(func() {
		roles, err := devenv.UserRoles(testutil.RepoRoot(), filepath.Join(testutil.AssetsDir(), "kubectl"))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range roles {
			r.SetResourceVersion("")
			if err := env.Client.Create(ctx, r); err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatalf("create ClusterRole %s: %v", r.GetName(), err)
			}
		}
	})
	subject := []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: name}}
	must(t, env.Client.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name + "-developer", Namespace: ns},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "mooring-developer"}, Subjects: subject}))
	if len(extra) > 0 {
		must(t, env.Client.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name + "-extra", Namespace: ns}, Rules: extra}))
		must(t, env.Client.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name + "-extra", Namespace: ns},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name + "-extra"}, Subjects: subject}))
	}
	return env.User(t, name, "developers")
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// expectRefused fails unless err is the webhook's Invalid saying every one of want.
func expectRefused(t *testing.T, err error, what string, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: admitted", what)
	}
	if !apierrors.IsInvalid(err) {
		t.Fatalf("%s: %v, want Invalid", what, err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Fatalf("%s: %v\ndoes not say %q", what, err, w)
		}
	}
}

func appReading(ns, name, secret string) *mooringv1.App {
	return &mooringv1.App{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: mooringv1.AppSpec{
		Image: "nginxinc/nginx-unprivileged:1.27",
		EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: secret}}}},
	}}
}

// Under the shipped mooring-developer role, which may not get Secrets, a user cannot
// reach a Secret through an App: not by envFrom (through kubectl too), not through a
// binding to a DatabaseCluster, not by naming it as a cluster's credentials. A user who
// may get the Secret can; and an unrelated edit of an App whose Secret its editor may not
// read is admitted.
func TestRequesterMayNotReachSecretsThroughMooring(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t)
	must(t, env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "orders-admin", Namespace: ns},
		StringData: map[string]string{"password": "superuser"}}))
	alice := developer(t, "alice", ns)
	bob := developer(t, "bob", ns, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"},
		Verbs: []string{"get"}, ResourceNames: []string{"orders-admin"}})

	// Through kubectl, as alice: the API server's answer names the field and the right.
	manifest := filepath.Join(t.TempDir(), "app.yaml")
	must(t, os.WriteFile(manifest, []byte(`apiVersion: mooring.dev/v1
kind: App
metadata:
  name: thief
  namespace: `+ns+`
spec:
  image: nginxinc/nginx-unprivileged:1.27
  envFrom:
  - secretRef:
      name: orders-admin
`), 0o600))
	_, stderr, err := alice.Kubectl("apply", "-f", manifest)
	if err == nil {
		t.Fatal("kubectl apply as alice admitted an App reading a Secret alice may not get")
	}
	for _, want := range []string{"spec.envFrom[0].secretRef.name: Forbidden", `user alice may not get secrets "orders-admin" in namespace ` + ns} {
		if !strings.Contains(stderr, want) {
			t.Fatalf("kubectl said %q, want %q", stderr, want)
		}
	}
	// alice may create Apps: the role is what it ships as.
	if out, stderr, err := alice.Kubectl("auth", "can-i", "create", "apps.mooring.dev", "-n", ns); err != nil || strings.TrimSpace(out) != "yes" {
		t.Fatalf("alice may not create Apps at all: %s %s %v", out, stderr, err)
	}

	// bob, who may get that one Secret, creates the same App.
	must(t, bob.Client.Create(ctx, appReading(ns, "orders-worker", "orders-admin")))

	// alice scales and relabels bob's App: its Secret is not hers to read, but the edit
	// adds nothing she may not get.
	testutil.Update(t, alice.Client, client.ObjectKey{Namespace: ns, Name: "orders-worker"}, &mooringv1.App{}, func(a *mooringv1.App) {
		a.Spec.Replicas = ptr.To[int32](2)
		a.Labels = map[string]string{"team": "orders"}
	})
	// Adding a Secret she may not get is refused, naming the new entry only.
	// The operator writes the App too (status, finalizer): a conflict is tried again, the
	// webhook's answer is what the test is about.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		app := &mooringv1.App{}
		if err := alice.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "orders-worker"}, app); err != nil {
			return err
		}
		app.Spec.Env = append(app.Spec.Env, corev1.EnvVar{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{
			SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "payments"}, Key: "token"}}})
		return alice.Client.Update(ctx, app)
	})
	expectRefused(t, err, "alice adding a Secret to bob's App",
		`spec.env[0].valueFrom.secretKeyRef.name: Forbidden: user alice may not get secrets "payments" in namespace `+ns)
	if strings.Contains(err.Error(), "orders-admin") {
		t.Fatalf("the unchanged reference was checked again: %v", err)
	}

	// A binding projects the cluster's credentials Secret: refused for alice, named.
	must(t, env.Client.Create(ctx, &v1beta1.DatabaseCluster{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: ns},
		Spec: v1beta1.DatabaseClusterSpec{Engine: v1beta1.PostgreSQL}}))
	bound := &mooringv1.App{ObjectMeta: metav1.ObjectMeta{Name: "reports", Namespace: ns}, Spec: mooringv1.AppSpec{
		Image:    "nginxinc/nginx-unprivileged:1.27",
		Bindings: []mooringv1.AppBinding{{Name: "db", Ref: mooringv1.AppBindingRef{Kind: mooringv1.BindingKindDatabaseCluster, Name: "orders"}}},
	}}
	expectRefused(t, alice.Client.Create(ctx, bound), "alice binding an App to a database",
		`spec.bindings[0].ref.name: Forbidden: user alice may not get secrets "orders-credentials" in namespace `+ns,
		"the credentials of DatabaseCluster orders")

	// Nor may she name a Secret as a new cluster's credentials (the default one, which
	// Mooring generates, she may).
	expectRefused(t, alice.Client.Create(ctx, &v1beta1.DatabaseCluster{ObjectMeta: metav1.ObjectMeta{Name: "copy", Namespace: ns},
		Spec: v1beta1.DatabaseClusterSpec{Engine: v1beta1.PostgreSQL, SecretName: "orders-admin"}}),
		"alice naming a Secret as a cluster's credentials",
		`spec.secretName: Forbidden: user alice may not get secrets "orders-admin" in namespace `+ns)
	must(t, alice.Client.Create(ctx, &v1beta1.DatabaseCluster{ObjectMeta: metav1.ObjectMeta{Name: "mine", Namespace: ns},
		Spec: v1beta1.DatabaseClusterSpec{Engine: v1beta1.PostgreSQL}}))
}

// Root is allowed only where the namespace's Pod Security level allows it: refused for a
// developer in a namespace enforcing restricted (and in one without the label), admitted
// in one labelled privileged.
func TestRootFollowsTheNamespacePodSecurityLevel(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	label := func(ns, level string) {
		testutil.Update(t, env.Client, client.ObjectKey{Name: ns}, &corev1.Namespace{}, func(n *corev1.Namespace) {
			n.Labels["pod-security.kubernetes.io/enforce"] = level
		})
	}
	root := func(ns string) *mooringv1.App {
		return &mooringv1.App{ObjectMeta: metav1.ObjectMeta{Name: "root", Namespace: ns}, Spec: mooringv1.AppSpec{
			Image: "nginx:1.27", SecurityContext: &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](0)}}}
	}
	restricted, plain, privileged := env.Namespace(t), env.Namespace(t), env.Namespace(t)
	label(restricted, "restricted")
	label(privileged, "privileged")
	for _, ns := range []string{restricted, plain, privileged} {
		carol := developer(t, "carol-"+ns, ns)
		err := carol.Client.Create(ctx, root(ns))
		switch ns {
		case restricted:
			expectRefused(t, err, "root in a restricted namespace", "spec.securityContext.runAsUser: Forbidden: namespace "+ns+
				` enforces Pod Security level "restricted" (label pod-security.kubernetes.io/enforce=restricted), which forbids runAsUser=0`)
		case plain:
			expectRefused(t, err, "root in a namespace without a level", "spec.securityContext.runAsUser: Forbidden: namespace "+ns+
				` has no pod-security.kubernetes.io/enforce label, which Mooring takes as Pod Security level "restricted"`)
		default:
			must(t, err)
		}
	}
}
