package ui

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/utils/ptr"

	"github.com/mooringhq/mooring/internal/objecttree"
	"github.com/mooringhq/mooring/internal/portal/cluster"
	"github.com/mooringhq/mooring/internal/portal/services"
)

// Objects reads what an object page shows beyond the object itself, as the caller: the
// API server's RBAC decides, as for everything else the UI shows.
type Objects interface {
	// Tree is the object's status tree as `kubectl mooring status` builds it (nil when the
	// object is not there), with the kinds the caller may not list.
	Tree(ctx context.Context, caller *services.Caller, namespace, kind, name string) (*objecttree.Node, []string, error)
	// Events are the events about the object.
	Events(ctx context.Context, caller *services.Caller, namespace, kind, name string) ([]corev1.Event, error)
	// Log is the last lines of a pod's log (all its containers' default: the first).
	Log(ctx context.Context, caller *services.Caller, namespace, pod string, lines int64) (string, error)
}

// Impersonated implements Objects with clients that impersonate the caller.
type Impersonated struct {
	Imp *cluster.Impersonator
	// Now is the clock of the trees' relative times (time.Now when nil).
	Now func() time.Time
}

// Tree reads the namespace with the status tree's code (internal/objecttree, which
// `kubectl mooring status` draws too), through a client acting as the caller.
func (o Impersonated) Tree(ctx context.Context, caller *services.Caller, namespace, kind, name string) (*objecttree.Node, []string, error) {
	c, err := o.Imp.Client(caller.Identity, objecttree.Scheme)
	if err != nil {
		return nil, nil, err
	}
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	return objecttree.ObjectTree(ctx, c, namespace, kind, name, now())
}

// Events lists the events whose involved object is kind/name, with a field selector so
// that only they cross the wire.
func (o Impersonated) Events(ctx context.Context, caller *services.Caller, namespace, kind, name string) ([]corev1.Event, error) {
	cs, err := o.Imp.Clientset(caller.Identity)
	if err != nil {
		return nil, err
	}
	sel := fields.Set{"involvedObject.kind": kind, "involvedObject.name": name}.AsSelector().String()
	l, err := cs.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		return nil, err
	}
	return l.Items, nil
}

// Log reads pods/log as the caller: a caller without that right gets the API server's
// 403.
func (o Impersonated) Log(ctx context.Context, caller *services.Caller, namespace, pod string, lines int64) (string, error) {
	cs, err := o.Imp.Clientset(caller.Identity)
	if err != nil {
		return "", err
	}
	b, err := cluster.DoRaw(ctx, cs.CoreV1().Pods(namespace).GetLogs(pod, &corev1.PodLogOptions{TailLines: ptr.To(lines), LimitBytes: ptr.To(logBytes)}))
	if err != nil {
		return "", err
	}
	return string(b), nil
}
