package plugin

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/api/v1beta1"
	"github.com/mooringhq/mooring/internal/testutil"
)

// rolesCluster is an API server with Mooring's CRDs and config/rbac's user roles (named
// as config/default names them), no operator: what a user of the plugin reads is made by
// the test. It returns an admin client and a kubeconfig for the admin, who may
// impersonate (--as).
func rolesCluster(t *testing.T) (client.Client, string) {
	t.Helper()
	root := testutil.RepoRoot()
	env := &envtest.Environment{
		BinaryAssetsDirectory: testutil.AssetsDir(),
		CRDDirectoryPaths:     []string{filepath.Join(root, "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("start envtest: %v", err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stop envtest: %v", err)
		}
	})
	c, err := client.New(cfg, client.Options{Scheme: Scheme})
	if err != nil {
		t.Fatal(err)
	}
	for _, role := range userRoles(t) {
		if err := c.Create(t.Context(), role); err != nil {
			t.Fatalf("create ClusterRole %s: %v", role.Name, err)
		}
	}
	admin, err := env.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := admin.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	return c, path
}

// userRoles are the ClusterRoles of config/rbac/user_roles.yaml, with config/default's prefix.
func userRoles(t *testing.T) []*rbacv1.ClusterRole {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "config", "rbac", "user_roles.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var out []*rbacv1.ClusterRole
	for _, doc := range strings.Split(string(data), "\n---\n") {
		role := &rbacv1.ClusterRole{}
		if err := yaml.UnmarshalStrict([]byte(doc), role); err != nil {
			t.Fatalf("config/rbac/user_roles.yaml: %v", err)
		}
		role.Name = "mooring-" + role.Name
		out = append(out, role)
	}
	return out
}

// The shipped developer and auditor roles may not list Secrets: `status` shows
// everything else Mooring made for a DatabaseCluster, the Secret as Unknown, and says
// which kinds it could not see, instead of failing on the first Forbidden.
func TestStatusAsDeveloperAndAuditor(t *testing.T) {
	c, kubeconfig := rolesCluster(t)
	ctx := t.Context()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}
	must(t, c.Create(ctx, ns))
	must(t, c.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "dave", Namespace: ns.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "mooring-developer"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "dave"}},
	}))
	must(t, c.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "audrey"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "mooring-auditor"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "audrey"}},
	}))

	db := &v1beta1.DatabaseCluster{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: ns.Name},
		Spec: v1beta1.DatabaseClusterSpec{Engine: "postgresql", ReplicaCount: 1, SecretName: "orders-credentials"}}
	must(t, c.Create(ctx, db))
	labels := map[string]string{"app.kubernetes.io/instance": "orders"}
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: ns.Name, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: v1beta1.GroupVersion.String(), Kind: "DatabaseCluster", Name: db.Name, UID: db.UID, Controller: ptr.To(true)}}},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To(int32(1)), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "postgres", Image: "postgres:18"}}}},
		},
	}
	must(t, c.Create(ctx, sts))
	must(t, c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "orders-credentials", Namespace: ns.Name}}))

	for _, tc := range []struct {
		user string
		args []string
	}{
		{"dave", []string{"-n", ns.Name, "status"}},
		{"dave", []string{"-n", ns.Name, "status", "dbc/orders"}},
		{"audrey", []string{"status", "-A"}},
	} {
		t.Run(tc.user+" "+strings.Join(tc.args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			o := NewOptions(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
			o.Color = "never"
			cmd := NewRootCommand(o)
			cmd.SetArgs(append([]string{"--kubeconfig", kubeconfig, "--as", tc.user}, tc.args...))
			if err := cmd.ExecuteContext(context.Background()); err != nil {
				t.Fatalf("kubectl mooring %s as %s: %v\n%s%s", strings.Join(tc.args, " "), tc.user, err, out.String(), errOut.String())
			}
			got := out.String()
			for _, want := range []string{
				`DatabaseCluster/orders `,
				`StatefulSet/orders `,
				`Secret/orders-credentials +- +Unknown +- +not visible to you\n`,
				`\nNot visible to you \(forbidden to list\): Secrets; objects of these kinds are not shown\.\n$`,
			} {
				if !regexp.MustCompile(want).MatchString(got) {
					t.Errorf("output does not match %q:\n%s", want, got)
				}
			}
		})
	}
}

// Whoever may update a kind of Mooring may scale it: every scale subresource a CRD
// declares is granted with the kind's update.
func TestRolesMayScaleWhatTheyMayUpdate(t *testing.T) {
	c, _ := rolesCluster(t)
	ctx := t.Context()
	crds := &apiextensionsv1.CustomResourceDefinitionList{}
	must(t, c.List(ctx, crds))
	var scalable []string
	for _, crd := range crds.Items {
		for _, v := range crd.Spec.Versions {
			if v.Subresources != nil && v.Subresources.Scale != nil && v.Storage {
				scalable = append(scalable, crd.Spec.Names.Plural)
			}
		}
	}
	if len(scalable) < 3 {
		t.Fatalf("scalable kinds %v: want at least apps, cacheinstances and databaseclusters", scalable)
	}
	for _, role := range userRoles(t) {
		user := "user-" + role.Name
		must(t, c.Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: user},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: user}},
		}))
		for _, plural := range scalable {
			may := func(verb, sub string) bool {
				sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user,
					ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "shop", Verb: verb, Group: "mooring.dev", Resource: plural, Subresource: sub}}}
				must(t, c.Create(ctx, sar))
				return sar.Status.Allowed
			}
			if update, scale := may("update", ""), may("update", "scale"); update != scale {
				t.Errorf("%s: update %s %v, update %s/scale %v", role.Name, plural, update, plural, scale)
			}
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// backup --wait as a user who may not read Jobs says the backup was requested and why it
// cannot be followed, rather than that Mooring started no Job.
func TestBackupWaitWithoutJobAccess(t *testing.T) {
	forbidden := apierrors.NewForbidden(batchv1.Resource("jobs"), "orders-nightly-manual-x", errors.New("RBAC"))
	c := fake.NewClientBuilder().WithScheme(Scheme).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, ok := obj.(*batchv1.Job); ok {
				return forbidden
			}
			return c.Get(ctx, key, obj, opts...)
		},
	}).Build()
	var out bytes.Buffer
	bo := &backupOptions{Options: NewOptions(genericiooptions.IOStreams{Out: &out}), wait: true, timeout: 10 * time.Second}
	b := &mooringv1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "orders-nightly", Namespace: "shop"}}
	err := bo.follow(t.Context(), c, b, "orders-nightly-manual-x")
	if err == nil || !strings.Contains(err.Error(), "you may not read Jobs in namespace shop") || !apierrors.IsForbidden(err) {
		t.Fatalf("got %v, want the backup requested but Jobs not readable", err)
	}
}
