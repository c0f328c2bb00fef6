package server_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	portalv1alpha1 "github.com/mooringhq/mooring/api/portal/v1alpha1"
	"github.com/mooringhq/mooring/internal/devenv"
	"github.com/mooringhq/mooring/internal/portal/cluster"
	"github.com/mooringhq/mooring/internal/portal/server"
	"github.com/mooringhq/mooring/internal/portal/services"
	"github.com/mooringhq/mooring/internal/testutil"
)

// defaultProtected is what the portal protects when started with its defaults, as
// config/portal starts it: its own namespaces, the operator's and kube-*.
var defaultProtected = services.Protected{
	Portal:   []string{devenv.PortalNamespace, cluster.DefaultUsersNamespace},
	Operator: server.DefaultOperatorNamespace,
}

// policyVariables reads the variables, by name, of the ValidatingAdmissionPolicy in
// config/portal's file (user_grants_policy.yaml unless named).
func policyVariables(t *testing.T, file ...string) map[string]string {
	t.Helper()
	name := "user_grants_policy.yaml"
	if len(file) > 0 {
		name = file[0]
	}
	data, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "config", "portal", name))
	if err != nil {
		t.Fatal(err)
	}
	doc, _, _ := strings.Cut(string(data), "\n---\n")
	var u unstructured.Unstructured
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatal(err)
	}
	if u.GetKind() != "ValidatingAdmissionPolicy" {
		t.Fatalf("the first object of %s is a %s, want the ValidatingAdmissionPolicy", name, u.GetKind())
	}
	vars, _, _ := unstructured.NestedSlice(u.Object, "spec", "variables")
	out := map[string]string{}
	for _, v := range vars {
		m := v.(map[string]any)
		out[m["name"].(string)], _ = m["expression"].(string)
	}
	return out
}

// TestPolicyProtectsThePortalsDefaults: the policy's list of protected namespaces is
// the portal's defaults (services.Protected as the portal builds it from its default
// flags), and both protect kube-*, so an edit with kubectl cannot write what the portal
// refuses. Needs no API server.
func TestPolicyProtectsThePortalsDefaults(t *testing.T) {
	vars := policyVariables(t)
	var listed []string
	for _, m := range regexp.MustCompile(`'([^']*)'`).FindAllStringSubmatch(vars["protectedNamespaces"], -1) {
		listed = append(listed, m[1])
	}
	want := append(slices.Clone(defaultProtected.Portal), defaultProtected.Operator)
	slices.Sort(listed)
	slices.Sort(want)
	if !slices.Equal(listed, want) {
		t.Errorf("the policy's protectedNamespaces %v, want the portal's defaults %v (its namespaces, --users-namespace, --operator-namespace)", listed, want)
	}
	for _, ns := range want {
		if defaultProtected.Why(ns) == "" {
			t.Errorf("the portal does not protect %s, which the policy lists", ns)
		}
	}
	if !strings.Contains(vars["protectedAdded"], "startsWith('kube-')") || defaultProtected.Why("kube-anything") == "" {
		t.Errorf("both must protect every kube-* namespace: policy %q, portal %q", vars["protectedAdded"], defaultProtected.Why("kube-anything"))
	}
}

// TestEditingAUserCannotAddAProtectedNamespace: someone who may update Users and bind
// everywhere (here cluster-admin, with kubectl) still cannot write a protected namespace
// into a User, on create or update: the API server refuses it naming spec.namespaces and
// the namespace, for exactly the namespaces the portal protects by default. (Before,
// only bind was checked, and cluster-admin wrote kube-system into a User; the bindings
// code ignored it, so the User claimed a grant it did not have.)
func TestEditingAUserCannotAddAProtectedNamespace(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	id := uuid.NewString()
	name := "protected-" + id[:8]
	u := &portalv1alpha1.User{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{portalv1alpha1.IDLabel: id}},
		Spec: portalv1alpha1.UserSpec{ID: id, Username: name, Email: name + "@example.com", Role: portalv1alpha1.RoleDeveloper}}
	if err := admin.Create(ctx, u); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Delete(context.Background(), u) })
	key := client.ObjectKeyFromObject(u)
	set := func(namespaces ...string) error {
		var u portalv1alpha1.User
		if err := admin.Get(ctx, key, &u); err != nil {
			return err
		}
		u.Spec.Namespaces = namespaces
		return admin.Update(ctx, &u)
	}
	denied := func(err error) bool { return apierrors.IsForbidden(err) || apierrors.IsInvalid(err) }
	refused := func(err error, what string, names ...string) {
		t.Helper()
		if !denied(err) {
			t.Fatalf("%s: want the policy to refuse it, got %v", what, err)
		}
		for _, s := range append([]string{"spec.namespaces", "protected"}, names...) {
			if !strings.Contains(err.Error(), s) {
				t.Fatalf("%s: want a message naming %q, got %v", what, s, err)
			}
		}
	}

	// The policy may take a moment to be in force on a fresh API server.
	var err0 error
	testutil.Eventually(t, 10*time.Second, "the policy to refuse kube-system", func() error {
		if err0 = set("kube-system"); err0 == nil {
			if err := set(); err != nil {
				return err
			}
			return errorf("kube-system was written into the User")
		}
		if !denied(err0) {
			return errorf("want a refusal, got %v", err0)
		}
		return nil
	})
	refused(err0, "kube-system", "kube-system")

	for _, ns := range []string{devenv.PortalNamespace, cluster.DefaultUsersNamespace, server.DefaultOperatorNamespace,
		"kube-system", "kube-public", "kube-node-lease", "kube-anything",
		"default", "team-a", "kubelet", "team-kube-system", "mooring-portal-x", "mooring-systems"} {
		err := set(ns)
		if defaultProtected.Why(ns) != "" {
			refused(err, ns, ns)
			continue
		}
		if err != nil {
			t.Fatalf("%s is not protected by the portal, want it written: %v", ns, err)
		}
	}

	// Several at once are all named; one already there is no reason to refuse an edit.
	if err := set("team-a"); err != nil {
		t.Fatal(err)
	}
	refused(set("team-a", "kube-system", devenv.PortalNamespace), "two protected namespaces", "kube-system, "+devenv.PortalNamespace)

	// On create as well.
	id2 := uuid.NewString()
	u2 := &portalv1alpha1.User{ObjectMeta: metav1.ObjectMeta{Name: "protected-" + id2[:8], Labels: map[string]string{portalv1alpha1.IDLabel: id2}},
		Spec: portalv1alpha1.UserSpec{ID: id2, Username: "protected-" + id2[:8], Email: "x@example.com", Role: portalv1alpha1.RoleDeveloper,
			Namespaces: []string{server.DefaultOperatorNamespace}}}
	err := admin.Create(ctx, u2)
	if err == nil {
		_ = admin.Delete(ctx, u2)
	}
	refused(err, "create with the operator's namespace", server.DefaultOperatorNamespace)
}

// TestEditingATeamCannotAddAProtectedNamespace: as for a User, cluster-admin with kubectl
// cannot write a protected namespace into a Team, on create or update, and the Team
// policy lists the same namespaces as the User policy (the chart writes both).
func TestEditingATeamCannotAddAProtectedNamespace(t *testing.T) {
	if u, tm := policyVariables(t)["protectedNamespaces"], policyVariables(t, "team_grants_policy.yaml")["protectedNamespaces"]; u != tm {
		t.Errorf("the Team policy protects %s, the User policy %s: want the same", tm, u)
	}
	env.Require(t)
	ctx := context.Background()
	name := teamName()
	team := &portalv1alpha1.Team{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: portalv1alpha1.TeamSpec{Role: "developer", Namespaces: []string{"kube-system"}}}
	var err error
	testutil.Eventually(t, 10*time.Second, "the policy to refuse a Team in kube-system", func() error {
		if err = admin.Create(ctx, team.DeepCopy()); err == nil {
			_ = admin.Delete(ctx, team)
			return errorf("a Team in kube-system was created")
		}
		return nil
	})
	for _, s := range []string{"spec.namespaces", "kube-system", "protected"} {
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), s) {
			t.Fatalf("create a Team in kube-system: want Invalid naming %q, got %v", s, err)
		}
	}
	team.Spec.Namespaces = []string{"team-a"}
	if err := admin.Create(ctx, team); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Delete(context.Background(), team) })
	team.Spec.Namespaces = []string{"team-a", server.DefaultOperatorNamespace}
	err = admin.Update(ctx, team)
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), server.DefaultOperatorNamespace) {
		t.Fatalf("add the operator's namespace to a Team: want Invalid naming it, got %v", err)
	}
}
