package controller_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	portalv1alpha1 "github.com/mooringhq/mooring/api/portal/v1alpha1"
	"github.com/mooringhq/mooring/internal/testutil"
)

// arrival bounds how long a created namespace may wait for its binding: far below the
// reconciler's 2-minute retry, so only the Namespace watch can meet it.
const arrival = 20 * time.Second

// TestBindingFollowsNamespaceCreation grants a developer a namespace that does not exist
// yet (as a User edited with kubectl can): its RoleBinding is made as soon as the
// namespace is created, not at the next 2-minute retry.
func TestBindingFollowsNamespaceCreation(t *testing.T) {
	ctx := context.Background()
	there := env.Namespace(t)
	later := "later-" + uuid.NewString()[:8]
	u := newUser(t, portalv1alpha1.RoleDeveloper, there, later)
	name := "mooring-portal-" + u.Spec.ID
	rbThere := fmt.Sprintf("RoleBinding %s/%s -> mooring-developer", there, name)
	rbLater := fmt.Sprintf("RoleBinding %s/%s -> mooring-developer", later, name)

	// The binding in the existing namespace shows the user was reconciled; none is in
	// the missing one. Settle lets the reconciler's last try (a failed create in the
	// missing namespace) pass, so the next one is the 2-minute retry unless the watch
	// brings it forward.
	waitBindings(t, u.Spec.ID, "the binding in the existing namespace only", rbThere)
	testutil.Settle(t)
	waitBindings(t, u.Spec.ID, "still no binding in the namespace that does not exist", rbThere)

	created := time.Now()
	if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: later}}); err != nil {
		t.Fatal(err)
	}
	waitBindingsWithin(t, arrival, u.Spec.ID, "a binding in the namespace within "+arrival.String()+" of its creation", rbThere, rbLater)
	t.Logf("binding in the created namespace after %s", time.Since(created).Round(time.Millisecond))
}
