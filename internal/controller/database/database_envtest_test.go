package database_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/api/v1beta1"
	"github.com/mooringhq/mooring/internal/apimetrics"
	"github.com/mooringhq/mooring/internal/controller/database"
	"github.com/mooringhq/mooring/internal/testutil"
)

var ctx = context.Background()

func createDB(t *testing.T, ns, name string, engineName v1beta1.DatabaseEngine, mutate func(*v1beta1.DatabaseCluster)) *v1beta1.DatabaseCluster {
	t.Helper()
	db := &v1beta1.DatabaseCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       v1beta1.DatabaseClusterSpec{Engine: engineName, ReplicaCount: 2},
	}
	if mutate != nil {
		mutate(db)
	}
	if err := env.Client.Create(ctx, db); err != nil {
		t.Fatalf("create DatabaseCluster: %v", err)
	}
	return db
}

func condition(db *v1beta1.DatabaseCluster, t string) *metav1.Condition {
	return meta.FindStatusCondition(db.Status.Conditions, t)
}

func TestDatabaseClusterChildren(t *testing.T) {
	ns := env.Namespace(t)
	for _, e := range []v1beta1.DatabaseEngine{v1beta1.PostgreSQL, v1beta1.MySQL} {
		db := createDB(t, ns, string(e), e, nil)
		key := client.ObjectKeyFromObject(db)
		sts := &appsv1.StatefulSet{}
		testutil.WaitFor(t, env.Client, key, sts, "StatefulSet "+key.Name, func(s *appsv1.StatefulSet) error {
			if !metav1.IsControlledBy(s, db) || *s.Spec.Replicas != 2 || len(s.Spec.VolumeClaimTemplates) != 1 {
				return fmt.Errorf("owners %v replicas %d claim templates %d", s.OwnerReferences, *s.Spec.Replicas, len(s.Spec.VolumeClaimTemplates))
			}
			return nil
		})
		for _, name := range []string{key.Name, key.Name + "-headless"} {
			testutil.WaitFor(t, env.Client, types.NamespacedName{Namespace: ns, Name: name}, &corev1.Service{}, "Service "+name, func(s *corev1.Service) error {
				if !metav1.IsControlledBy(s, db) {
					return fmt.Errorf("owners %v", s.OwnerReferences)
				}
				return nil
			})
		}
		secret := &corev1.Secret{}
		testutil.WaitFor(t, env.Client, types.NamespacedName{Namespace: ns, Name: key.Name + "-credentials"}, secret, "generated Secret", func(s *corev1.Secret) error {
			if len(s.Data[database.PasswordKey]) != 24 || len(s.Data[database.UsernameKey]) == 0 {
				return fmt.Errorf("data keys %v", keys(s.Data))
			}
			return nil
		})
		password := string(secret.Data[database.PasswordKey])

		// The generated Secret is never overwritten: a reconcile after a hand edit keeps it.
		secret.Data[database.PasswordKey] = []byte("chosen-by-hand")
		if err := env.Client.Update(ctx, secret); err != nil {
			t.Fatal(err)
		}
		testutil.Update(t, env.Client, key, &v1beta1.DatabaseCluster{}, func(d *v1beta1.DatabaseCluster) { d.Spec.ReplicaCount = 3 })
		testutil.WaitFor(t, env.Client, key, &appsv1.StatefulSet{}, "StatefulSet scaled to 3", func(s *appsv1.StatefulSet) error {
			if *s.Spec.Replicas != 3 {
				return fmt.Errorf("replicas %d", *s.Spec.Replicas)
			}
			return nil
		})
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(secret), secret); err != nil {
			t.Fatal(err)
		}
		if string(secret.Data[database.PasswordKey]) != "chosen-by-hand" {
			t.Fatalf("Secret was overwritten: password is %d chars, not the hand-set value", len(secret.Data[database.PasswordKey]))
		}
		// No event or status message carries the password.
		assertNotLeaked(t, ns, password)
	}
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func assertNotLeaked(t *testing.T, ns, secret string) {
	t.Helper()
	events := &eventsv1.EventList{}
	if err := env.Client.List(ctx, events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if strings.Contains(e.Note, secret) {
			t.Fatalf("event %s/%s carries the password", e.Reason, e.Note)
		}
	}
	dbs := &v1beta1.DatabaseClusterList{}
	if err := env.Client.List(ctx, dbs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, db := range dbs.Items {
		for _, c := range db.Status.Conditions {
			if strings.Contains(c.Message, secret) {
				t.Fatalf("condition %s carries the password", c.Type)
			}
		}
	}
}

// A DatabaseCluster whose spec.secretName names a Secret that does not exist, then one
// without a password, waits with SecretReady=False, a Warning event naming what is
// missing and no StatefulSet; it proceeds as soon as the Secret is complete.
func TestUserSecretThatAppearsLater(t *testing.T) {
	ns := env.Namespace(t)
	db := createDB(t, ns, "late", v1beta1.PostgreSQL, func(d *v1beta1.DatabaseCluster) { d.Spec.SecretName = "my-creds" })
	key := client.ObjectKeyFromObject(db)
	testutil.WaitFor(t, env.Client, key, &v1beta1.DatabaseCluster{}, "SecretReady=False and phase Pending", func(d *v1beta1.DatabaseCluster) error {
		c := condition(d, v1beta1.ConditionSecretReady)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1beta1.ReasonSecretNotFound || d.Status.Phase != v1beta1.DatabasePending {
			return fmt.Errorf("SecretReady %+v phase %s", c, d.Status.Phase)
		}
		if !strings.Contains(c.Message, "my-creds") {
			return fmt.Errorf("message %q does not name the Secret", c.Message)
		}
		return nil
	})
	testutil.Eventually(t, testutil.DefaultTimeout, "a Warning event naming the Secret", func() error {
		events := &eventsv1.EventList{}
		if err := env.Client.List(ctx, events, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, e := range events.Items {
			if e.Type == corev1.EventTypeWarning && e.Reason == v1beta1.ReasonSecretNotFound && e.Regarding.Name == "late" {
				return nil
			}
		}
		return fmt.Errorf("%d events, none a SecretNotFound warning", len(events.Items))
	})
	if err := env.Client.Get(ctx, key, &appsv1.StatefulSet{}); err == nil {
		t.Fatal("StatefulSet created before its Secret exists")
	}
	if err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "my-creds"}, &corev1.Secret{}); err == nil {
		t.Fatal("Mooring generated a Secret under a name the user chose")
	}

	// The Secret appears without a password: the pods could not start, so the cluster
	// still waits, and says which key is missing.
	userSecret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "my-creds", Namespace: ns},
		StringData: map[string]string{"username": "u"}}
	if err := env.Client.Create(ctx, userSecret); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, env.Client, key, &v1beta1.DatabaseCluster{}, "SecretReady=False SecretKeysMissing naming the password key", func(d *v1beta1.DatabaseCluster) error {
		c := condition(d, v1beta1.ConditionSecretReady)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1beta1.ReasonSecretKeysMissing || d.Status.Phase != v1beta1.DatabasePending {
			return fmt.Errorf("SecretReady %+v phase %s", c, d.Status.Phase)
		}
		if !strings.Contains(c.Message, `has no "password"`) {
			return fmt.Errorf("message %q does not name the missing key", c.Message)
		}
		return nil
	})
	testutil.WaitEvent(t, env.Client, ns, corev1.EventTypeWarning, v1beta1.ReasonSecretKeysMissing, "late")
	if err := env.Client.Get(ctx, key, &appsv1.StatefulSet{}); err == nil {
		t.Fatal("StatefulSet created while its Secret has no password")
	}

	// The password is added: the metadata watch and the index bring the cluster back at once.
	testutil.Update(t, env.Client, client.ObjectKeyFromObject(userSecret), &corev1.Secret{}, func(s *corev1.Secret) {
		s.StringData = map[string]string{"password": "p"}
	})
	testutil.WaitFor(t, env.Client, key, &appsv1.StatefulSet{}, "StatefulSet once the Secret exists", func(*appsv1.StatefulSet) error { return nil })
	testutil.WaitFor(t, env.Client, key, &v1beta1.DatabaseCluster{}, "SecretReady=True", func(d *v1beta1.DatabaseCluster) error {
		if c := condition(d, v1beta1.ConditionSecretReady); c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("SecretReady %+v", c)
		}
		return nil
	})

	// Checked once, the Secret is not read again while its resourceVersion stays.
	testutil.Settle(t)
	secretGets := apimetrics.Key{Method: http.MethodGet, Resource: "secrets"}
	before, reconciles := apimetrics.Snapshot(), testutil.ReconcileCount(t, database.Component)
	testutil.Update(t, env.Client, key, &v1beta1.DatabaseCluster{}, func(d *v1beta1.DatabaseCluster) {
		d.Annotations = map[string]string{"example.com/touched": "yes"}
	})
	testutil.Eventually(t, testutil.DefaultTimeout, "a reconcile of the touched cluster", func() error {
		if got := testutil.ReconcileCount(t, database.Component) - reconciles; got < 1 {
			return fmt.Errorf("%v reconciles", got)
		}
		return nil
	})
	if got := apimetrics.Snapshot()[secretGets] - before[secretGets]; got != 0 {
		t.Errorf("a reconcile over an unchanged Secret read it %v times, want 0", got)
	}
}

func TestDatabaseClusterStatus(t *testing.T) {
	ns := env.Namespace(t)
	db := createDB(t, ns, "orders", v1beta1.MySQL, nil)
	key := client.ObjectKeyFromObject(db)
	sts := &appsv1.StatefulSet{}
	testutil.WaitFor(t, env.Client, key, sts, "StatefulSet", func(*appsv1.StatefulSet) error { return nil })
	sts.Status = appsv1.StatefulSetStatus{ObservedGeneration: sts.Generation, Replicas: 2, ReadyReplicas: 2, UpdatedReplicas: 2, AvailableReplicas: 2}
	if err := env.Client.Status().Update(ctx, sts); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, env.Client, key, &v1beta1.DatabaseCluster{}, "Running with the primary endpoint", func(d *v1beta1.DatabaseCluster) error {
		ready := condition(d, mooringv1.ConditionReady)
		if d.Status.Phase != v1beta1.DatabaseRunning || d.Status.ReadyReplicas != 2 || ready == nil || ready.Status != metav1.ConditionTrue ||
			d.Status.PrimaryEndpoint != "orders."+ns+".svc:3306" || d.Status.ObservedGeneration != d.Generation {
			return fmt.Errorf("status %+v", d.Status)
		}
		return nil
	})
	out := env.Kubectl(t, "get", "databaseclusters", "-n", ns)
	if header := strings.Fields(strings.SplitN(out, "\n", 2)[0]); strings.Join(header, " ") != "NAME ENGINE VERSION REPLICAS READY PHASE AGE" {
		t.Errorf("kubectl get columns %v", header)
	}
	testutil.ExpectNoWrites(t, database.Component, 1, func() {
		testutil.Update(t, env.Client, key, &v1beta1.DatabaseCluster{}, func(d *v1beta1.DatabaseCluster) {
			d.Annotations = map[string]string{"example.com/touched": "yes"}
		})
	})
}

// Growing storage expands the PVCs and re-creates the StatefulSet with the new template.
// envtest runs no controllers, so the test plays the StatefulSet controller (it creates the
// PVC), the volume binder (Bound), the garbage collector (orphan finalizer) and the
// resizer (capacity).
func TestStorageGrowth(t *testing.T) {
	ns := env.Namespace(t)
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "expandable-" + ns}, Provisioner: "example.com/fake", AllowVolumeExpansion: ptr.To(true)}
	if err := env.Client.Create(ctx, sc); err != nil {
		t.Fatal(err)
	}
	db := createDB(t, ns, "grow", v1beta1.PostgreSQL, func(d *v1beta1.DatabaseCluster) {
		d.Spec.ReplicaCount = 1
		d.Spec.Storage.StorageClassName = ptr.To(sc.Name)
	})
	key := client.ObjectKeyFromObject(db)
	sts, pvc := createDataClaim(t, db)
	oldUID := sts.UID
	// A claim not bound yet says nothing about resizing: no StorageResized condition
	// (before, a new database read "not yet 1Gi; the storage class must allow volume
	// expansion" until its claims were bound).
	testutil.Settle(t)
	if err := env.Client.Get(ctx, key, db); err != nil {
		t.Fatal(err)
	}
	if c := condition(db, v1beta1.ConditionStorageResized); c != nil {
		t.Fatalf("StorageResized %+v with only a pending claim, want no condition", c)
	}
	bindClaim(t, pvc, "1Gi")
	testutil.WaitFor(t, env.Client, key, &v1beta1.DatabaseCluster{}, "StorageResized=True at 1Gi", func(d *v1beta1.DatabaseCluster) error {
		if c := condition(d, v1beta1.ConditionStorageResized); c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("StorageResized %+v", c)
		}
		return nil
	})

	testutil.Update(t, env.Client, key, &v1beta1.DatabaseCluster{}, func(d *v1beta1.DatabaseCluster) {
		d.Spec.Storage.Size = ptr.To(resource.MustParse("2Gi"))
	})
	testutil.WaitFor(t, env.Client, client.ObjectKeyFromObject(pvc), &corev1.PersistentVolumeClaim{}, "PVC request grown to 2Gi", func(p *corev1.PersistentVolumeClaim) error {
		if got := p.Spec.Resources.Requests[corev1.ResourceStorage]; got.String() != "2Gi" {
			return fmt.Errorf("request %s", got.String())
		}
		return nil
	})
	// Play the garbage collector: an orphaning delete waits on its finalizer.
	testutil.Eventually(t, testutil.DefaultTimeout, "the old StatefulSet deleted with orphaned pods", func() error {
		old := &appsv1.StatefulSet{}
		if err := env.Client.Get(ctx, key, old); err != nil {
			return client.IgnoreNotFound(err)
		}
		if old.UID != oldUID {
			return nil
		}
		if old.DeletionTimestamp == nil {
			return errors.New("old StatefulSet not deleted yet")
		}
		if !slicesContains(old.Finalizers, metav1.FinalizerOrphanDependents) {
			return fmt.Errorf("finalizers %v, want orphan", old.Finalizers)
		}
		old.Finalizers = nil
		return env.Client.Update(ctx, old)
	})
	testutil.WaitFor(t, env.Client, key, &appsv1.StatefulSet{}, "StatefulSet re-created with a 2Gi template", func(s *appsv1.StatefulSet) error {
		got := s.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage]
		if s.UID == oldUID || got.String() != "2Gi" {
			return fmt.Errorf("uid changed %v, template size %s", s.UID != oldUID, got.String())
		}
		return nil
	})
	testutil.WaitFor(t, env.Client, key, &v1beta1.DatabaseCluster{}, "StorageResized=False while the volume expands", func(d *v1beta1.DatabaseCluster) error {
		if c := condition(d, v1beta1.ConditionStorageResized); c == nil || c.Status != metav1.ConditionFalse {
			return fmt.Errorf("StorageResized %+v", c)
		}
		return nil
	})
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(pvc), pvc); err != nil {
		t.Fatal(err)
	}
	pvc.Status.Capacity[corev1.ResourceStorage] = resource.MustParse("2Gi")
	if err := env.Client.Status().Update(ctx, pvc); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, env.Client, key, &v1beta1.DatabaseCluster{}, "StorageResized=True and status.storageSize 2Gi", func(d *v1beta1.DatabaseCluster) error {
		c := condition(d, v1beta1.ConditionStorageResized)
		if c == nil || c.Status != metav1.ConditionTrue || d.Status.StorageSize == nil || d.Status.StorageSize.String() != "2Gi" {
			return fmt.Errorf("StorageResized %+v storageSize %v", c, d.Status.StorageSize)
		}
		return nil
	})
}

func slicesContains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}
