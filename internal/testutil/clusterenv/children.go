package clusterenv

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
)

// AssertOneChildEach checks that every App of ns has exactly one object in each list,
// controlled by it, that nothing Mooring made in ns belongs to no App, and that every
// Deployment has one ReplicaSet (no rollout was started twice). It returns the App count.
func (e *Env) AssertOneChildEach(t testing.TB, ns string, lists ...client.ObjectList) int {
	t.Helper()
	apps := &mooringv1.AppList{}
	if err := e.Client.List(context.Background(), apps, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	uids := map[string]string{}
	for _, a := range apps.Items {
		uids[string(a.UID)] = a.Name
	}
	managed := client.MatchingLabels{"app.kubernetes.io/managed-by": "mooring"}
	for _, list := range lists {
		if err := e.Client.List(context.Background(), list, client.InNamespace(ns), managed); err != nil {
			t.Fatal(err)
		}
		perApp := map[string]int{}
		_ = meta.EachListItem(list, func(ro runtime.Object) error {
			o := ro.(client.Object)
			owner := metav1.GetControllerOf(o)
			if owner == nil || uids[string(owner.UID)] == "" {
				t.Errorf("%T %s is orphaned (controller %v)", o, o.GetName(), owner)
				return nil
			}
			perApp[uids[string(owner.UID)]]++
			return nil
		})
		for _, a := range apps.Items {
			if perApp[a.Name] != 1 {
				t.Errorf("App %s has %d children in %T, want 1", a.Name, perApp[a.Name], list)
			}
		}
	}
	rs := &appsv1.ReplicaSetList{}
	if err := e.Client.List(context.Background(), rs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	perDeployment := map[string]int{}
	for _, r := range rs.Items {
		if o := metav1.GetControllerOf(&r); o != nil {
			perDeployment[o.Name]++
		}
	}
	for _, a := range apps.Items {
		if perDeployment[a.Name] != 1 {
			t.Errorf("Deployment %s has %d ReplicaSets, want 1", a.Name, perDeployment[a.Name])
		}
	}
	return len(apps.Items)
}
