package controller

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"

	portalv1alpha1 "github.com/mooringhq/mooring/api/portal/v1alpha1"
)

func ns(uid types.UID, labels map[string]string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "team-a", UID: uid, Labels: labels}}
}

// TestNamespaceArrived: only a namespace that is new (created, or created again under
// the same name while the watch was down) can let a binding be created.
func TestNamespaceArrived(t *testing.T) {
	tests := map[string]struct {
		pass func() bool
		want bool
	}{
		"created": {func() bool { return namespaceArrived.Create(event.CreateEvent{Object: ns("1", nil)}) }, true},
		"labels changed": {func() bool {
			return namespaceArrived.Update(event.UpdateEvent{ObjectOld: ns("1", nil), ObjectNew: ns("1", map[string]string{"a": "b"})})
		}, false},
		"deleted and created again between two lists": {func() bool {
			return namespaceArrived.Update(event.UpdateEvent{ObjectOld: ns("1", nil), ObjectNew: ns("2", nil)})
		}, true},
		"deleted": {func() bool { return namespaceArrived.Delete(event.DeleteEvent{Object: ns("1", nil)}) }, false},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if got := tt.pass(); got != tt.want {
				t.Errorf("passes = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestGrantedNamespaces: a developer's namespaces are indexed; another role's are not,
// as they grant no binding.
func TestGrantedNamespaces(t *testing.T) {
	for role, want := range map[portalv1alpha1.Role][]string{
		portalv1alpha1.RoleDeveloper: {"a", "b"},
		portalv1alpha1.RoleAdmin:     nil,
		portalv1alpha1.RoleNone:      nil,
	} {
		u := &portalv1alpha1.User{Spec: portalv1alpha1.UserSpec{Role: role, Namespaces: []string{"a", "b"}}}
		if got := grantedNamespaces(u); !slices.Equal(got, want) {
			t.Errorf("%s: granted namespaces %q, want %q", role, got, want)
		}
	}
}
