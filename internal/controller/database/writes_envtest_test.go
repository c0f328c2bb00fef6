package database_test

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mooringhq/mooring/api/v1beta1"
	"github.com/mooringhq/mooring/internal/controller/database"
	"github.com/mooringhq/mooring/internal/engine"
	"github.com/mooringhq/mooring/internal/testutil"
)

// The Secrets a new cluster generates go through the engine's CreateOnce: created once,
// without an owner (they belong with the data), counted in mooring_child_operations_total
// and announced in an event.
func TestGeneratedSecretsGoThroughTheEngine(t *testing.T) {
	ns := env.Namespace(t)
	created := testutil.ChildOperations(t, "Secret", "created")
	db := createDB(t, ns, "orders", v1beta1.PostgreSQL, nil)
	testutil.WaitFor(t, env.Client, client.ObjectKeyFromObject(db), &v1beta1.DatabaseCluster{}, "SecretReady=True",
		func(d *v1beta1.DatabaseCluster) error {
			if c := condition(d, v1beta1.ConditionSecretReady); c == nil || c.Status != metav1.ConditionTrue {
				return fmt.Errorf("SecretReady %+v", c)
			}
			return nil
		})
	for _, name := range []string{"orders-credentials", database.AdminSecretName(db)} {
		s := &corev1.Secret{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, s); err != nil {
			t.Fatalf("Secret %s: %v", name, err)
		}
		if len(s.OwnerReferences) != 0 || len(s.Data[database.PasswordKey]) == 0 {
			t.Errorf("Secret %s: owners %v, %d password bytes; want no owner and a password", name, s.OwnerReferences, len(s.Data[database.PasswordKey]))
		}
	}
	if got := testutil.ChildOperations(t, "Secret", "created") - created; got < 2 {
		t.Errorf("the two generated Secrets' creates counted %v times in mooring_child_operations_total, want 2", got)
	}
	// (The superuser Secret's event has the same type, reason and action on the same
	// object, so the event recorder folds it into the first one's series.)
	testutil.WaitEvent(t, env.Client, ns, corev1.EventTypeNormal, engine.EventCreated, db.Name)
	testutil.Eventually(t, testutil.DefaultTimeout, "the event of the generated credentials Secret", func() error {
		events := &eventsv1.EventList{}
		if err := env.Client.List(ctx, events, client.InNamespace(ns)); err != nil {
			return err
		}
		var seen []string
		for _, e := range events.Items {
			if strings.Contains(e.Note, "Generated credentials Secret orders-credentials") {
				return nil
			}
			seen = append(seen, e.Reason+": "+e.Note)
		}
		return fmt.Errorf("events %q", seen)
	})
}
