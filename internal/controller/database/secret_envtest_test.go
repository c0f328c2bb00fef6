package database_test

import (
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/api/v1beta1"
	"github.com/mooringhq/mooring/internal/controller/database"
	"github.com/mooringhq/mooring/internal/engine"
	"github.com/mooringhq/mooring/internal/testutil"
)

// waitSecretLost waits for SecretReady=False/SecretNotFound with a message naming what
// holds the data, and the one Warning event.
func waitSecretLost(t *testing.T, key types.NamespacedName, holder string) {
	t.Helper()
	testutil.WaitFor(t, env.Client, key, &v1beta1.DatabaseCluster{}, "SecretReady=False SecretNotFound naming "+holder, func(d *v1beta1.DatabaseCluster) error {
		c := condition(d, v1beta1.ConditionSecretReady)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1beta1.ReasonSecretNotFound || !strings.Contains(c.Message, holder) {
			return fmt.Errorf("SecretReady %+v", c)
		}
		return nil
	})
	testutil.WaitEvent(t, env.Client, key.Namespace, corev1.EventTypeWarning, v1beta1.ReasonSecretNotFound, key.Name)
}

func assertNoSecret(t *testing.T, key types.NamespacedName) {
	t.Helper()
	if err := env.Client.Get(ctx, key, &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Fatalf("Secret %s: %v, want it not generated over existing data", key.Name, err)
	}
}

// A generated credentials Secret deleted once the cluster has data is not generated
// again: a new password would not match the database's. The cluster waits, says why
// once, leaves its StatefulSet alone, and resumes when the Secret is restored.
func TestDeletedSecretNotRegeneratedOverData(t *testing.T) {
	ns := env.Namespace(t)
	db := createDB(t, ns, "lost", v1beta1.PostgreSQL, func(d *v1beta1.DatabaseCluster) { d.Spec.ReplicaCount = 1 })
	key := client.ObjectKeyFromObject(db)
	secretKey := types.NamespacedName{Namespace: ns, Name: "lost-credentials"}
	testutil.WaitFor(t, env.Client, key, &appsv1.StatefulSet{}, "StatefulSet", func(*appsv1.StatefulSet) error { return nil })
	secret := &corev1.Secret{}
	testutil.WaitFor(t, env.Client, secretKey, secret, "generated Secret", func(*corev1.Secret) error { return nil })
	original := string(secret.Data[database.PasswordKey])

	if err := env.Client.Delete(ctx, secret); err != nil {
		t.Fatal(err)
	}
	waitSecretLost(t, key, "StatefulSet lost")
	assertNoSecret(t, secretKey)

	// A spec change waits too: the StatefulSet is not touched while the Secret is missing.
	testutil.Update(t, env.Client, key, &v1beta1.DatabaseCluster{}, func(d *v1beta1.DatabaseCluster) { d.Spec.ReplicaCount = 3 })
	testutil.WaitFor(t, env.Client, key, &v1beta1.DatabaseCluster{}, "the replica change reconciled", func(d *v1beta1.DatabaseCluster) error {
		if d.Status.ObservedGeneration != d.Generation {
			return fmt.Errorf("observedGeneration %d, generation %d", d.Status.ObservedGeneration, d.Generation)
		}
		return nil
	})
	sts := &appsv1.StatefulSet{}
	if err := env.Client.Get(ctx, key, sts); err != nil || *sts.Spec.Replicas != 1 {
		t.Fatalf("StatefulSet while the Secret is missing: %v, replicas %v, want 1", err, sts.Spec.Replicas)
	}
	assertNoSecret(t, secretKey)
	// Resyncs neither repeat the event nor write anything else.
	testutil.ExpectNoWrites(t, database.Component, 1, func() {
		testutil.Update(t, env.Client, key, &v1beta1.DatabaseCluster{}, func(d *v1beta1.DatabaseCluster) {
			d.Annotations = map[string]string{"example.com/touched": "yes"}
		})
	})

	// The user restores the credentials: the cluster goes on with them.
	restored := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: secretKey.Name, Namespace: ns},
		StringData: map[string]string{database.UsernameKey: "app", database.PasswordKey: "restored-by-hand"}}
	if err := env.Client.Create(ctx, restored); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, env.Client, key, &appsv1.StatefulSet{}, "StatefulSet scaled to 3 once the Secret is back", func(s *appsv1.StatefulSet) error {
		if *s.Spec.Replicas != 3 {
			return fmt.Errorf("replicas %d", *s.Spec.Replicas)
		}
		return nil
	})
	testutil.WaitFor(t, env.Client, key, &v1beta1.DatabaseCluster{}, "SecretReady=True", func(d *v1beta1.DatabaseCluster) error {
		if c := condition(d, v1beta1.ConditionSecretReady); c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("SecretReady %+v", c)
		}
		return nil
	})
	if err := env.Client.Get(ctx, secretKey, restored); err != nil || string(restored.Data[database.PasswordKey]) != "restored-by-hand" {
		t.Fatalf("restored Secret: %v, password replaced: %v", err, string(restored.Data[database.PasswordKey]) != "restored-by-hand")
	}
	assertNotLeaked(t, ns, original)
	assertNotLeaked(t, ns, "restored-by-hand")
}

// A cluster created over the data volume of an earlier one of the same name (kept by the
// Retain policy) gets no new password either.
func TestNoSecretGeneratedOverRetainedVolume(t *testing.T) {
	ns := env.Namespace(t)
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data-reborn-0", Namespace: ns, Labels: engine.Labels(database.Component, "reborn")},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	if err := env.Client.Create(ctx, pvc); err != nil {
		t.Fatal(err)
	}
	db := createDB(t, ns, "reborn", v1beta1.MySQL, func(d *v1beta1.DatabaseCluster) { d.Spec.ReplicaCount = 1 })
	key := client.ObjectKeyFromObject(db)
	waitSecretLost(t, key, "PVC data-reborn-0")
	assertNoSecret(t, types.NamespacedName{Namespace: ns, Name: "reborn-credentials"})
	if err := env.Client.Get(ctx, key, &appsv1.StatefulSet{}); !apierrors.IsNotFound(err) {
		t.Fatalf("StatefulSet without credentials: %v, want none", err)
	}
}

// While the Secret is missing the pods that run go on running: the cluster reports the
// Secret through SecretReady and Ready, and keeps the counts (and the scale subresource's
// replicas, which reads them) of the live StatefulSet rather than zeroing them.
func TestSecretLossKeepsLiveCounts(t *testing.T) {
	ns := env.Namespace(t)
	db := createDB(t, ns, "counted", v1beta1.PostgreSQL, nil)
	key := client.ObjectKeyFromObject(db)
	testutil.WaitFor(t, env.Client, key, &appsv1.StatefulSet{}, "StatefulSet", func(*appsv1.StatefulSet) error { return nil })
	testutil.MarkStatefulSetReady(t, env.Client, key)
	testutil.WaitFor(t, env.Client, key, &v1beta1.DatabaseCluster{}, "Running with 2 of 2 ready", func(d *v1beta1.DatabaseCluster) error {
		if d.Status.Phase != v1beta1.DatabaseRunning || d.Status.ReadyReplicas != 2 || d.Status.Replicas != 2 {
			return fmt.Errorf("phase %s replicas %d ready %d", d.Status.Phase, d.Status.Replicas, d.Status.ReadyReplicas)
		}
		return nil
	})

	if err := env.Client.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "counted-credentials"}}); err != nil {
		t.Fatal(err)
	}
	waitSecretLost(t, key, "StatefulSet counted")
	got := &v1beta1.DatabaseCluster{}
	if err := env.Client.Get(ctx, key, got); err != nil {
		t.Fatal(err)
	}
	ready := condition(got, mooringv1.ConditionReady)
	if ready == nil || ready.Status != metav1.ConditionFalse || ready.Reason != v1beta1.ReasonSecretNotFound {
		t.Errorf("Ready %+v, want False SecretNotFound", ready)
	}
	if got.Status.Replicas != 2 || got.Status.ReadyReplicas != 2 || got.Status.Phase != v1beta1.DatabaseRunning {
		t.Errorf("with the Secret missing: phase %s replicas %d ready %d, want the live StatefulSet's Running 2/2",
			got.Status.Phase, got.Status.Replicas, got.Status.ReadyReplicas)
	}
	scale := &autoscalingv1.Scale{}
	if err := env.Client.SubResource("scale").Get(ctx, got, scale); err != nil {
		t.Fatal(err)
	}
	if scale.Status.Replicas != 2 {
		t.Errorf("scale subresource status.replicas %d, want 2", scale.Status.Replicas)
	}
}
