package ui

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	portalv1alpha1 "github.com/mooringhq/mooring/api/portal/v1alpha1"
	"github.com/mooringhq/mooring/internal/objecttree"
	"github.com/mooringhq/mooring/internal/portal/cluster"
	"github.com/mooringhq/mooring/internal/portal/services"
	"github.com/mooringhq/mooring/internal/testutil"
)

// apiServer is a bare API server (RBAC, no kubelet, no CRDs) for the tests of what
// Impersonated reads as the user; adminConfig is its cluster-admin.
var (
	apiServer   = &testutil.APIServer{Set: func(cfg *rest.Config) error { adminConfig = cfg; return nil }}
	adminConfig *rest.Config
)

func TestMain(m *testing.M) { apiServer.Main(m) }

// impersonatedCaller is a portal user of role developer, as the portal impersonates it.
func impersonatedCaller(imp *cluster.Impersonator, id string) *services.Caller {
	return &services.Caller{User: &portalv1alpha1.User{Spec: portalv1alpha1.UserSpec{ID: id, Username: id, Role: portalv1alpha1.RoleDeveloper}},
		Identity: imp.IdentityOf(id, portalv1alpha1.RoleDeveloper)}
}

// TestImpersonatedLogAndEventsAreTheUsers reads a pod's log and an object's events as two
// users of a real API server: RBAC decides. There is no kubelet, so the user allowed
// pods/log gets the empty log of an unscheduled pod; the one without the right gets
// 403, which the page shows as "not allowed". Log lines are TestObjectPageShowsEverything's
// (over a fake) and the browser test's.
func TestImpersonatedLogAndEventsAreTheUsers(t *testing.T) {
	apiServer.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ns := "ui-objects"
	admin := adminWithNamespace(ctx, t, ns)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: ns},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}}}
	if _, err := admin.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, e := range []struct{ kind, name, reason string }{{"App", "web", "Created"}, {"App", "other", "Other"}, {"CacheInstance", "web", "Cache"}} {
		ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{GenerateName: "e-", Namespace: ns}, Reason: e.reason, Type: "Normal",
			InvolvedObject: corev1.ObjectReference{Kind: e.kind, Name: e.name, Namespace: ns}}
		if _, err := admin.CoreV1().Events(ns).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	imp := cluster.NewImpersonator(adminConfig, "portal-users")
	reader, noLogs := impersonatedCaller(imp, "reader"), impersonatedCaller(imp, "nologs")
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "read", Namespace: ns}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods", "pods/log", "events"}, Verbs: []string{"get", "list"}}}}
	noLogRole := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "read-no-logs", Namespace: ns}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods", "events"}, Verbs: []string{"get", "list"}}}}
	for _, r := range []*rbacv1.Role{role, noLogRole} {
		if _, err := admin.RbacV1().Roles(ns).Create(ctx, r, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for user, r := range map[*services.Caller]string{reader: "read", noLogs: "read-no-logs"} {
		rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: r, Namespace: ns},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: r},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user.Identity.UserName}}}
		if _, err := admin.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	o := Impersonated{Imp: imp}

	// RBAC takes effect at once for new bindings, but poll rather than assume it.
	var err1, err2 error
	if perr := testutil.Poll(30*time.Second, func() error {
		_, err1 = o.Log(ctx, reader, ns, "web-1", logLines)
		_, err2 = o.Log(ctx, noLogs, ns, "web-1", logLines)
		if apierrors.IsForbidden(err1) || !apierrors.IsForbidden(err2) {
			return fmt.Errorf("want the reader's log read to pass RBAC and nologs' refused; got %w and %w", err1, err2)
		}
		return nil
	}); perr != nil {
		t.Fatal(perr)
	}
	if l := makeLog("web-1", "", err2); !l.NotAllowed || len(l.Lines) != 0 {
		t.Errorf("a refused log reads %+v, want not allowed", l)
	}
	if err1 != nil {
		t.Errorf("the reader's log read: want it allowed (an unscheduled pod's log is empty), got %v", err1)
	}

	events, err := o.Events(ctx, reader, ns, "App", "web")
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 1 || events[0].Reason != "Created" {
		t.Errorf("events of App web: want only its one (Created), got %d: %+v", len(events), events)
	}
	stranger := impersonatedCaller(imp, "stranger")
	if _, err := o.Events(ctx, stranger, ns, "App", "web"); !apierrors.IsForbidden(err) {
		t.Errorf("events as a user without rights: want 403, got %v", err)
	}

	// The trees' clients (kept per identity, one discovery for all) act as their user.
	for range 2 {
		c, err := imp.Client(reader.Identity, objecttree.Scheme)
		if err != nil {
			t.Fatal(err)
		}
		var pods corev1.PodList
		if err := c.List(ctx, &pods, client.InNamespace(ns)); err != nil || len(pods.Items) != 1 {
			t.Fatalf("pods as the reader through its kept client: want web-1, got %d, %v", len(pods.Items), err)
		}
	}
	c, err := imp.Client(stranger.Identity, objecttree.Scheme)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.List(ctx, &corev1.PodList{}, client.InNamespace(ns)); !apierrors.IsForbidden(err) {
		t.Errorf("pods as a user without rights through its kept client: want 403, got %v", err)
	}
}

// adminWithNamespace is a client as the API server's admin, and namespace ns made with it.
func adminWithNamespace(ctx context.Context, t *testing.T, ns string) kubernetes.Interface {
	t.Helper()
	admin, err := kubernetes.NewForConfig(adminConfig)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return admin
}
