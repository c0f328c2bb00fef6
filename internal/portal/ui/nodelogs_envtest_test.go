package ui

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mooringhq/mooring/internal/portal/cluster"
	"github.com/mooringhq/mooring/internal/testutil"
)

// closedPort is a local port nothing listens on: a node whose kubelet is there serves
// no logs, as kwok's simulated nodes do not.
func closedPort(t *testing.T) int32 {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	return int32(port)
}

// TestLogOfAPodWhoseNodeServesNoLogs: a pod bound to a Node with no kubelet behind it (a
// simulated node) has its log read refused by the API server, which cannot reach the
// node; the object page's log panel says so in words, not the API server's "unknown".
func TestLogOfAPodWhoseNodeServesNoLogs(t *testing.T) {
	apiServer.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ns := "ui-node-logs"
	admin := adminWithNamespace(ctx, t, ns)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "simulated-node"}}
	node, err := admin.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}}
	node.Status.DaemonEndpoints.KubeletEndpoint.Port = closedPort(t)
	if _, err := admin.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: ns},
		Spec: corev1.PodSpec{NodeName: node.Name, Containers: []corev1.Container{{Name: "web", Image: "nginx"}}}}
	if _, err := admin.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	imp := cluster.NewImpersonator(adminConfig, "portal-users")
	reader := impersonatedCaller(imp, "node-log-reader")
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "read", Namespace: ns}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods", "pods/log"}, Verbs: []string{"get", "list"}}}}
	if _, err := admin.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "read", Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "read"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: reader.Identity.UserName}}}
	if _, err := admin.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	o := Impersonated{Imp: imp}
	var l *logView
	if perr := testutil.Poll(30*time.Second, func() error {
		text, err := o.Log(ctx, reader, ns, "web-1", logLines)
		if err == nil {
			return fmt.Errorf("want the log read refused (no kubelet behind the node), got the log %q", text)
		}
		if l = makeLog("web-1", text, err); l.NotAllowed {
			return fmt.Errorf("want the log read to pass RBAC, got %w", err)
		}
		return nil
	}); perr != nil {
		t.Fatal(perr)
	}
	if !strings.Contains(l.Error, "This pod's node serves no logs") || strings.Contains(l.Error, "unknown") {
		t.Errorf("the log panel of a pod on a node without logs reads %q, want it to say the node serves no logs", l.Error)
	}
}
