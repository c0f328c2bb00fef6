package plugin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
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

// cluster is the package's API server, started by the first test that needs one.
var cluster struct {
	once       sync.Once
	env        *envtest.Environment
	client     client.Client
	kubeconfig string
	err        error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if cluster.env != nil {
		if err := cluster.env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stop envtest:", err)
		}
	}
	os.Exit(code)
}

// rolesCluster is an API server with Mooring's CRDs and config/rbac's user roles (named
// as config/default names them), no operator: what a user of the plugin reads is made by
// the test. It returns an admin client and a kubeconfig for the admin, who may
// impersonate (--as). Tests share it: each uses names of its own.
func rolesCluster(t *testing.T) (client.Client, string) {
	t.Helper()
	testutil.RequireTier(t, testutil.Integration)
	cluster.once.Do(func() { cluster.err = startCluster() })
	if cluster.err != nil {
		t.Fatal(cluster.err)
	}
	return cluster.client, cluster.kubeconfig
}

func startCluster() error {
	root := testutil.RepoRoot()
	cluster.env = &envtest.Environment{
		BinaryAssetsDirectory: testutil.AssetsDir(),
		CRDDirectoryPaths:     []string{filepath.Join(root, "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := cluster.env.Start()
	if err != nil {
		cluster.env = nil
		return fmt.Errorf("start envtest: %w", err)
	}
	c, err := client.New(cfg, client.Options{Scheme: Scheme})
	if err != nil {
		return err
	}
	roles, err := userRoles()
	if err != nil {
		return err
	}
	for _, role := range roles {
		if err := c.Create(context.Background(), role); err != nil {
			return fmt.Errorf("create ClusterRole %s: %w", role.Name, err)
		}
	}
	admin, err := cluster.env.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return err
	}
	kubeconfig, err := admin.KubeConfig()
	if err != nil {
		return err
	}
	// The env's own directory outlives the first test (t.TempDir would not).
	path := filepath.Join(cluster.env.ControlPlane.APIServer.CertDir, "plugin-test-kubeconfig")
	if err := os.WriteFile(path, kubeconfig, 0o600); err != nil {
		return err
	}
	cluster.client, cluster.kubeconfig = c, path
	return nil
}

// userRoles are the ClusterRoles of config/rbac/user_roles.yaml, with config/default's prefix.
func userRoles() ([]*rbacv1.ClusterRole, error) {
	data, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "config", "rbac", "user_roles.yaml"))
	if err != nil {
		return nil, err
	}
	var out []*rbacv1.ClusterRole
	for _, doc := range strings.Split(string(data), "\n---\n") {
		role := &rbacv1.ClusterRole{}
		if err := yaml.UnmarshalStrict([]byte(doc), role); err != nil {
			return nil, fmt.Errorf("config/rbac/user_roles.yaml: %w", err)
		}
		role.Name = "mooring-" + role.Name
		out = append(out, role)
	}
	return out, nil
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

	waitBound(t, c, "dave", ns.Name)
	waitBound(t, c, "audrey", "")

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
				`Secret/orders-admin +- +Unknown +- +not visible to you\n`,
				// The shipped roles read every kind of child but Secrets.
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
	roles, err := userRoles()
	must(t, err)
	for _, role := range roles {
		user := "user-" + role.Name
		must(t, c.Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: user},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: user}},
		}))
		waitBound(t, c, user, "shop")
		for _, plural := range scalable {
			if update, scale := allowed(t, c, user, "update", plural, "", "shop"), allowed(t, c, user, "update", plural, "scale", "shop"); update != scale {
				t.Errorf("%s: update %s %v, update %s/scale %v", role.Name, plural, update, plural, scale)
			}
		}
	}
}

// allowed asks the API server whether user may verb the Mooring resource in ns.
func allowed(t *testing.T, c client.Client, user, verb, resource, sub, ns string) bool {
	t.Helper()
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user,
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Group: "mooring.dev", Resource: resource, Subresource: sub}}}
	must(t, c.Create(t.Context(), sar))
	return sar.Status.Allowed
}

// waitBound waits until the authorizer has seen a new binding of user: RBAC reads
// bindings from a cache, so the first requests after one is created may be denied.
func waitBound(t *testing.T, c client.Client, user, ns string) {
	t.Helper()
	testutil.Eventually(t, testutil.DefaultTimeout, user+"'s binding to take effect", func() error {
		if !allowed(t, c, user, "list", "databaseclusters", "", ns) {
			return fmt.Errorf("%s may not list databaseclusters in %q yet", user, ns)
		}
		return nil
	})
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
