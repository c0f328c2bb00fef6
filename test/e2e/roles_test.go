package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/mooringhq/mooring/internal/testutil"
)

// installUserRoles applies the people's ClusterRoles exactly as config/default renders
// them (names prefixed mooring-), which the suite's set-up does not install.
func installUserRoles(t *testing.T) {
	t.Helper()
	rendered := suite.MustRun(t, "kustomize", filepath.Join(suite.Root, "config", "default"))
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(rendered), 4096)
	var roles []string
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			break
		}
		if u.GetKind() != "ClusterRole" {
			continue
		}
		labels := u.GetLabels()
		if labels["app.kubernetes.io/component"] != "user-role" && !strings.HasPrefix(u.GetName(), "mooring-aggregate-to-") {
			continue
		}
		doc, err := yaml.Marshal(u.Object)
		if err != nil {
			t.Fatal(err)
		}
		roles = append(roles, string(doc))
	}
	if len(roles) != 6 {
		t.Fatalf("config/default renders %d people's ClusterRoles, want 6 (3 roles, 3 aggregations)", len(roles))
	}
	suite.Apply(t, "default", strings.Join(roles, "---\n"))
}

// as runs kubectl impersonating user.
func as(user string, args ...string) (string, error) {
	return suite.Run(append([]string{"--as", user}, args...)...)
}

// canI asks the API server whether user may do verb on resource in ns ("" = cluster-wide).
func canI(t *testing.T, user, verb, resource, ns string) bool {
	t.Helper()
	args := []string{"--kubeconfig", suite.Cluster.KubeconfigPath, "auth", "can-i", verb, resource, "--as", user}
	if ns == "" {
		args = append(args, "--all-namespaces")
	} else {
		args = append(args, "-n", ns)
	}
	cmd := exec.Command(filepath.Join(suite.BinDir, "kubectl"), args...)
	var out bytes.Buffer
	cmd.Stdout = &out
	_ = cmd.Run() // exit status 1 means "no"; the answer is on stdout
	switch strings.TrimSpace(out.String()) {
	case "yes":
		return true
	case "no":
		return false
	}
	t.Fatalf("kubectl auth can-i %s %s as %s: unexpected answer %q", verb, resource, user, out.String())
	return false
}

// review asks the API server with a SubjectAccessReview whether user may do verb on
// resource ("plural[.group][/subresource]") in ns ("" = all namespaces).
func review(t *testing.T, user, verb, resource, ns string) bool {
	t.Helper()
	res, sub, _ := strings.Cut(resource, "/")
	res, group, _ := strings.Cut(res, ".")
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: user,
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: ns, Verb: verb, Group: group, Resource: res, Subresource: sub,
		},
	}}
	if err := suite.Client.Create(context.Background(), sar); err != nil {
		t.Fatalf("SubjectAccessReview %s %s as %s: %v", verb, resource, user, err)
	}
	return sar.Status.Allowed
}

type permission struct {
	verb, resource, ns string
	allowed            bool
}

// TestUserRoles proves every allow and deny of the people's roles: mooring-admin
// (everything on Mooring's kinds everywhere), mooring-developer (bound in one namespace:
// Mooring's kinds, pods, logs and events there, nothing elsewhere), mooring-auditor
// (read-only everywhere, never Secrets), and the aggregation into admin, edit and view.
func TestUserRoles(t *testing.T) {
	installUserRoles(t)
	a := suite.Namespace(t, "roles-a")
	b := suite.Namespace(t, "roles-b")
	suite.MustRun(t, "create", "clusterrolebinding", "roles-alice", "--clusterrole=mooring-admin", "--user=alice")
	suite.MustRun(t, "create", "rolebinding", "dave", "-n", a, "--clusterrole=mooring-developer", "--user=dave")
	suite.MustRun(t, "create", "clusterrolebinding", "roles-audrey", "--clusterrole=mooring-auditor", "--user=audrey")
	suite.MustRun(t, "create", "rolebinding", "edith", "-n", a, "--clusterrole=edit", "--user=edith")
	suite.MustRun(t, "create", "rolebinding", "victor", "-n", a, "--clusterrole=view", "--user=victor")
	suite.MustRun(t, "create", "rolebinding", "adam", "-n", a, "--clusterrole=admin", "--user=adam")

	kinds := []string{"apps.mooring.dev", "cacheinstances.mooring.dev", "databaseclusters.mooring.dev", "backups.mooring.dev"}
	writes := []string{"create", "update", "patch", "delete"}
	reads := []string{"get", "list", "watch"}
	table := map[string][]permission{}
	add := func(user string, allowed bool, verbs, resources []string, namespaces ...string) {
		for _, ns := range namespaces {
			for _, r := range resources {
				for _, v := range verbs {
					table[user] = append(table[user], permission{v, r, ns, allowed})
				}
			}
		}
	}
	people := []string{"pods", "pods/log", "events", "events.events.k8s.io"}
	// children: what Mooring makes, readable so that `kubectl mooring status` shows the tree.
	children := []string{"deployments.apps", "replicasets.apps", "statefulsets.apps", "cronjobs.batch", "jobs.batch",
		"services", "configmaps", "persistentvolumeclaims", "poddisruptionbudgets.policy",
		"horizontalpodautoscalers.autoscaling", "ingresses.networking.k8s.io", "httproutes.gateway.networking.k8s.io"}
	// admin: everything on Mooring's kinds in every namespace, scale, deletecollection.
	add("alice", true, append(append(writes, reads...), "deletecollection"), kinds, a, b, "")
	add("alice", true, []string{"update", "patch"}, []string{"apps.mooring.dev/scale", "cacheinstances.mooring.dev/scale", "databaseclusters.mooring.dev/scale"}, a, b)
	add("alice", true, reads, people, a, b)
	add("alice", true, reads, children, a, b)
	add("alice", false, []string{"get", "list"}, []string{"secrets"}, a, b)
	add("alice", false, writes, []string{"deployments.apps", "statefulsets.apps", "pods"}, a)
	add("alice", false, []string{"update", "patch"}, []string{"apps.mooring.dev/status"}, a)
	// developer: Mooring's kinds, pods, logs and events in namespace A only.
	add("dave", true, append(writes, reads...), kinds, a)
	add("dave", true, []string{"update", "patch"}, []string{"apps.mooring.dev/scale", "databaseclusters.mooring.dev/scale"}, a)
	add("dave", true, reads, people, a)
	add("dave", true, reads, children, a)
	add("dave", false, reads, children, b)
	add("dave", false, append(writes, reads...), kinds, b)
	add("dave", false, reads, people, b)
	add("dave", false, []string{"list"}, kinds, "")
	add("dave", false, []string{"get", "list"}, []string{"secrets"}, a)
	add("dave", false, []string{"deletecollection"}, kinds, a)
	add("dave", false, writes, []string{"deployments.apps", "rolebindings.rbac.authorization.k8s.io", "pods"}, a)
	add("dave", false, []string{"update", "patch"}, []string{"databaseclusters.mooring.dev/status"}, a)
	// auditor: read-only on Mooring's kinds, pods, logs and events everywhere; no Secrets.
	add("audrey", true, reads, kinds, a, b, "")
	add("audrey", true, reads, people, a, b, "")
	add("audrey", true, reads, children, a, b, "")
	add("audrey", false, writes, children, a)
	add("audrey", false, append(writes, "deletecollection"), kinds, a, b)
	add("audrey", false, []string{"update", "patch"}, []string{"apps.mooring.dev/scale"}, a)
	add("audrey", false, []string{"get", "list", "watch"}, []string{"secrets"}, a, b, "")
	add("audrey", false, writes, []string{"pods", "configmaps"}, a)
	// aggregation: the built-in roles gain Mooring's kinds, in the spirit of each.
	add("adam", true, append(append(writes, reads...), "deletecollection"), kinds, a)
	add("edith", true, append(writes, reads...), kinds, a)
	add("edith", false, writes, kinds, b)
	add("victor", true, reads, kinds, a)
	add("victor", false, writes, kinds, a)

	// The whole table through SubjectAccessReviews (what kubectl auth can-i sends), then
	// a sample through kubectl auth can-i itself.
	checked := 0
	for user, perms := range table {
		for _, p := range perms {
			if got := review(t, user, p.verb, p.resource, p.ns); got != p.allowed {
				t.Errorf("%s may %s %s in %q: %v, want %v", user, p.verb, p.resource, p.ns, got, p.allowed)
			}
			checked++
		}
	}
	t.Logf("%d allow/deny checks", checked)
	for _, p := range []struct {
		user string
		permission
	}{
		{"dave", permission{"create", "apps.mooring.dev", a, true}},
		{"dave", permission{"create", "apps.mooring.dev", b, false}},
		{"dave", permission{"get", "pods", a, true}},
		{"alice", permission{"delete", "databaseclusters.mooring.dev", b, true}},
		{"audrey", permission{"list", "databaseclusters.mooring.dev", "", true}},
		{"audrey", permission{"create", "apps.mooring.dev", a, false}},
		{"audrey", permission{"get", "secrets", a, false}},
		{"victor", permission{"delete", "backups.mooring.dev", a, false}},
	} {
		if got := canI(t, p.user, p.verb, p.resource, p.ns); got != p.allowed {
			t.Errorf("kubectl auth can-i %s %s -n %q --as %s: %v, want %v", p.verb, p.resource, p.ns, p.user, got, p.allowed)
		}
	}

	// Real requests, through the webhooks and the operator like any user's.
	app := func(name string) string {
		return fmt.Sprintf("apiVersion: mooring.dev/v1\nkind: App\nmetadata:\n  name: %s\nspec:\n  image: nginx:1.27\n", name)
	}
	db := "apiVersion: mooring.dev/v1beta1\nkind: DatabaseCluster\nmetadata:\n  name: orders\nspec:\n  engine: postgresql\n  replicaCount: 1\n  storage:\n    size: 1Gi\n"
	mustAs := func(user string, args ...string) string {
		t.Helper()
		out, err := asStdin(user, "", args...)
		if err != nil {
			t.Fatalf("as %s: %v", user, err)
		}
		return out
	}
	denied := func(user, stdin string, args ...string) {
		t.Helper()
		out, err := asStdin(user, stdin, args...)
		if err == nil || !strings.Contains(err.Error(), "forbidden") {
			t.Errorf("as %s, kubectl %s: want forbidden, got %v (%s)", user, strings.Join(args, " "), err, out)
		}
	}
	if _, err := asStdin("dave", app("web"), "apply", "-n", a, "-f", "-"); err != nil {
		t.Fatalf("developer creates an App in its namespace: %v", err)
	}
	mustAs("dave", "scale", "-n", a, "app/web", "--replicas=2")
	mustAs("dave", "get", "pods,events", "-n", a)
	denied("dave", app("web"), "apply", "-n", b, "-f", "-")
	denied("dave", "", "get", "apps", "-n", b)
	denied("dave", "", "get", "secrets", "-n", a)

	if _, err := asStdin("alice", db, "apply", "-n", b, "-f", "-"); err != nil {
		t.Fatalf("admin creates a DatabaseCluster in any namespace: %v", err)
	}
	mustAs("alice", "annotate", "-n", b, "databasecluster/orders", "mooring.dev/paused=true")
	mustAs("alice", "delete", "-n", b, "databasecluster/orders", "--wait=false")
	denied("alice", "", "get", "secrets", "-n", b)

	mustAs("audrey", "get", "apps,cacheinstances,databaseclusters,backups", "--all-namespaces")
	mustAs("audrey", "get", "pods,events", "-n", a)
	denied("audrey", "", "get", "secrets", "-n", a)
	denied("audrey", "", "get", "secret", "mooring-webhook-server-cert", "-n", "mooring-system")
	denied("audrey", app("spy"), "apply", "-n", a, "-f", "-")
	denied("audrey", "", "delete", "app/web", "-n", a)
	denied("audrey", "", "annotate", "-n", a, "app/web", "mooring.dev/paused=true")

	// Logs: the API server authorizes pods/log before it asks the (simulated) kubelet,
	// so an allowed user gets some other error, or logs, but never "forbidden".
	// The App applied above needs a moment to have a pod: wait for one, so the checks
	// always run.
	var pod string
	testutil.Eventually(t, rollout, "a pod of App web in "+a, func() error {
		out, err := suite.Run("get", "pods", "-n", a, "-l", "app.kubernetes.io/instance=web", "-o", "jsonpath={.items[*].metadata.name}")
		if err != nil {
			return err
		}
		names := strings.Fields(out)
		if len(names) == 0 {
			return fmt.Errorf("no pod yet")
		}
		pod = names[0]
		return nil
	})
	for _, user := range []string{"dave", "audrey"} {
		if _, err := as(user, "logs", "-n", a, pod); err != nil && strings.Contains(err.Error(), "forbidden") {
			t.Errorf("%s may not read logs of %s: %v", user, pod, err)
		}
	}
	if _, err := as("nobody", "logs", "-n", a, pod); err == nil || !strings.Contains(err.Error(), "forbidden") {
		t.Errorf("a user without a role read logs of %s: %v", pod, err)
	}
}

// asStdin is as with stdin for kubectl apply -f -.
func asStdin(user, stdin string, args ...string) (string, error) {
	return suite.RunStdin(stdin, append([]string{"--as", user}, args...)...)
}
