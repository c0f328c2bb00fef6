package server_test

import (
	"context"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	portalv1alpha1 "github.com/mooringhq/mooring/api/portal/v1alpha1"
	"github.com/mooringhq/mooring/internal/portal/server"
	"github.com/mooringhq/mooring/internal/testutil"
)

// TestEditingATeamDirectlyNeedsBind: a Team edited with kubectl needs what the portal
// asks for: bind on the team's role in every namespace the edit grants it in (all of
// them when the team gains a member, only the added ones otherwise). Taking grants
// away needs only update.
func TestEditingATeamDirectlyNeedsBind(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	nsA, nsB := env.Namespace(t), env.Namespace(t)
	editor := "test-team-editor-" + strings.TrimPrefix(nsA, "testeditingateamdirectlyneedsbind-")
	create(t, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: editor}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"portal.mooring.dev"}, Resources: []string{"teams"}, Verbs: []string{"get", "list", "create", "update", "delete"}},
	}})
	create(t, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: editor},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: editor},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: editor}}})
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: editor}
	kubectl, err := client.New(cfg, client.Options{Scheme: server.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	denied := func(err error) bool { return apierrors.IsForbidden(err) || apierrors.IsInvalid(err) }
	refused := func(err error, names, what string) {
		t.Helper()
		if !denied(err) || !strings.Contains(err.Error(), names) || !strings.Contains(err.Error(), editor) {
			t.Fatalf("%s: want the policy to refuse it naming %s and %s, got %v", what, names, editor, err)
		}
	}

	name := editor[:min(len(editor), 43)]
	newTeam := func() *portalv1alpha1.Team {
		return &portalv1alpha1.Team{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: portalv1alpha1.TeamSpec{Role: "developer", Members: []string{"ann"}, Namespaces: []string{nsA}}}
	}
	t.Cleanup(func() { _ = admin.Delete(ctx, newTeam()) })
	var err0 error
	testutil.Eventually(t, 10*time.Second, "the policy to refuse an editor without bind creating a team", func() error {
		if err0 = kubectl.Create(ctx, newTeam()); err0 == nil || !denied(err0) || strings.Contains(err0.Error(), "cannot create") {
			if err0 == nil {
				_ = admin.Delete(ctx, newTeam())
			}
			return errorf("want a refusal, got %v", err0)
		}
		return nil
	})
	refused(err0, nsA, "an editor without bind creating a developers' team")

	if err := admin.Create(ctx, newTeam()); err != nil {
		t.Fatal(err)
	}
	set := func(change func(*portalv1alpha1.TeamSpec)) error {
		var tm portalv1alpha1.Team
		if err := kubectl.Get(ctx, client.ObjectKey{Name: name}, &tm); err != nil {
			return err
		}
		change(&tm.Spec)
		return kubectl.Update(ctx, &tm)
	}
	refused(set(func(s *portalv1alpha1.TeamSpec) { s.Members = append(s.Members, "bob") }), nsA, "adding a member")
	refused(set(func(s *portalv1alpha1.TeamSpec) { s.Groups = []string{"devs"} }), nsA, "adding a group")
	refused(set(func(s *portalv1alpha1.TeamSpec) { s.Namespaces = append(s.Namespaces, nsB) }), nsB, "adding a namespace")
	refused(set(func(s *portalv1alpha1.TeamSpec) { s.Role = "auditor" }), nsA, "changing the role")
	if err := set(func(s *portalv1alpha1.TeamSpec) { s.Members = nil; s.Description = "emptied" }); err != nil {
		t.Fatalf("removing a member grants nothing, want it allowed: %v", err)
	}

	// bind on mooring-developer in namespace A only.
	bindDev := editor + "-bind"
	create(t, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: bindDev}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"clusterroles"}, Verbs: []string{"bind"}, ResourceNames: []string{"mooring-developer"}},
	}})
	create(t, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: bindDev, Namespace: nsA},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: bindDev},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: editor}}})
	testutil.Eventually(t, 10*time.Second, "a member added where the editor may bind", func() error {
		return set(func(s *portalv1alpha1.TeamSpec) { s.Members = []string{"bob"} })
	})
	err = set(func(s *portalv1alpha1.TeamSpec) { s.Namespaces = append(s.Namespaces, nsB) })
	refused(err, nsB, "a namespace the editor may not bind in")
	if strings.Contains(err.Error(), nsA) {
		t.Fatalf("the refusal names %s, which the team already had: %v", nsA, err)
	}
	// More than two new namespaces without bind cluster-wide: the policy's own words, not
	// the API server's about its CEL cost limit.
	err = set(func(s *portalv1alpha1.TeamSpec) { s.Namespaces = append(s.Namespaces, "many-1", "many-2", "many-3") })
	refused(err, "add at most 2 namespaces per edit", "three new namespaces without bind cluster-wide")
	if strings.Contains(err.Error(), "cost") {
		t.Fatalf("three new namespaces: want the policy's own message, got the API server's: %v", err)
	}
}
