package database

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/api/v1beta1"
	"github.com/mooringhq/mooring/internal/dump"
	"github.com/mooringhq/mooring/internal/engine"
)

// AdminSecretName is the Secret with the superuser password, which is also the
// replication user's. It is Mooring's: the application's credentials are in
// spec.secretName, and changing them must not change these, which Mooring needs to
// change the application's password in the database and the replicas need to follow the
// primary.
func AdminSecretName(db *v1beta1.DatabaseCluster) string { return v1beta1.AdminSecretName(db.Name) }

// adminUser is the engine's superuser, the user the credentials Job connects as.
func adminUser(engine v1beta1.DatabaseEngine) string { return dump.Superuser(engine) }

// AdminSecret is the generated superuser Secret, with the given password. Like the
// credentials Secret it has no owner: the password belongs with the data, which may
// outlive the cluster.
func AdminSecret(db *v1beta1.DatabaseCluster, password string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: AdminSecretName(db), Namespace: db.Namespace, Labels: engine.Labels(Component, db.Name)},
		Type:       corev1.SecretTypeOpaque,
		StringData: map[string]string{UsernameKey: adminUser(db.Spec.Engine), PasswordKey: password},
	}
}

// isAdminSecretOf tells Mooring's superuser Secret of db from a Secret of the same name
// somebody else made, which Mooring must neither use nor take over.
func isAdminSecretOf(m metav1.Object, db *v1beta1.DatabaseCluster) bool {
	return IsAdminSecretOf(m, db.Name)
}

// IsAdminSecretOf tells the superuser Secret Mooring made for cluster clusterName (by its
// labels) from a Secret of the same name somebody else made; the webhook asks it too.
func IsAdminSecretOf(m metav1.Object, clusterName string) bool {
	l := m.GetLabels()
	return l[mooringv1.ManagedByLabel] == mooringv1.ManagedBy && l[mooringv1.InstanceLabel] == clusterName && l[mooringv1.ComponentLabel] == Component
}

// ensureAdminSecret makes sure the superuser Secret exists; it reports false, with
// SecretReady=False and one Warning event, when the cluster must wait for it. Mooring
// creates it only when it is missing, and never updates or deletes it:
//   - for a cluster without data, with a random password;
//   - for a cluster with data that never had one (made before Mooring kept the superuser
//     password apart), with the password of the credentials Secret, which is what such a
//     cluster's superuser and replication user were set up with;
//   - for a cluster with data that had one (status.credentials says so), never: a new
//     password would not be the database's, so the cluster waits until it is restored.
func (h Handler) ensureAdminSecret(ctx context.Context, s *engine.Scope[*v1beta1.DatabaseCluster]) (bool, error) {
	db := s.Object
	key := client.ObjectKey{Namespace: db.Namespace, Name: AdminSecretName(db)}
	current := secretMeta()
	err := s.Client.Get(ctx, key, current)
	if apierrors.IsNotFound(err) {
		// The cache may lag behind the Secret an earlier reconcile created.
		err = h.APIReader.Get(ctx, key, current)
	}
	if err == nil {
		if !isAdminSecretOf(current, db) {
			setSecretCondition(s, metav1.ConditionFalse, v1beta1.ReasonAdminSecretConflict, fmt.Sprintf(
				"Secret %s exists but was not made by Mooring for this cluster; Mooring keeps the superuser password "+
					"there. Rename or delete that Secret.", key.Name))
			return false, nil
		}
		return true, nil
	}
	if !apierrors.IsNotFound(err) {
		return false, fmt.Errorf("get Secret %s: %w", key.Name, err)
	}
	data, err := existingData(ctx, s)
	if err != nil {
		return false, err
	}
	var password, how string
	switch {
	case data == "":
		if password, err = randomPassword(); err != nil {
			return false, err
		}
		how = "Generated Secret " + key.Name + " with a random superuser password"
	case db.Status.Credentials == nil:
		credentials := &corev1.Secret{}
		if err := h.APIReader.Get(ctx, client.ObjectKey{Namespace: db.Namespace, Name: db.Spec.SecretName}, credentials); err != nil {
			return false, fmt.Errorf("read Secret %s: %w", db.Spec.SecretName, err)
		}
		password = string(credentials.Data[PasswordKey])
		if password == "" {
			return false, fmt.Errorf("credentials Secret %s has no %s to take the superuser password from", db.Spec.SecretName, PasswordKey)
		}
		how = fmt.Sprintf("Created Secret %s with the superuser password the cluster was set up with, that of Secret %s; "+
			"from now on the application's password in %s can change without changing it", key.Name, db.Spec.SecretName, db.Spec.SecretName)
	default:
		setSecretCondition(s, metav1.ConditionFalse, v1beta1.ReasonAdminSecretNotFound, fmt.Sprintf(
			"Secret %s with the superuser password does not exist, but the cluster has data (%s): a new password would "+
				"not be the database's, so Mooring generates none. Re-create the Secret with key %q holding the "+
				"superuser password the database has.", key.Name, data, PasswordKey))
		return false, nil
	}
	// Unowned: the password belongs with the data, which may outlive the cluster.
	if _, err := s.CreateOnce(ctx, AdminSecret(db, password), engine.Unowned(),
		engine.Announce(corev1.EventTypeNormal, engine.EventCreated, "Create", how+".")); err != nil {
		return false, err
	}
	return true, nil
}
