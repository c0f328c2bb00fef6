package webhook

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mooringhq/mooring/api/v1beta1"
	"github.com/mooringhq/mooring/internal/instance"
)

// validateAppUserNotReserved refuses a spec.secretName whose Secret exists and names, as
// the application user, one of the database's own accounts: the superuser, the
// replication user, MariaDB's and MySQL's system accounts. The application would
// otherwise get their rights (or take their password over). A Secret that does not
// exist yet is Mooring's to generate with user "app", or waited for; the instance
// manager refuses a reserved name too, should the Secret change later. Only the
// username key is read, and no value is kept. The error is for a failed lookup.
func validateAppUserNotReserved(ctx context.Context, reader client.Reader, db *v1beta1.DatabaseCluster) (field.ErrorList, error) {
	name := db.Spec.SecretName
	if name == "" || len(validation.IsDNS1123Subdomain(name)) > 0 {
		return nil, nil // an invalid name is refused by validateFields, not looked up
	}
	if reader == nil {
		return nil, errors.New("the DatabaseCluster webhook has no reader to look up spec.secretName with")
	}
	secret := &corev1.Secret{}
	switch err := reader.Get(ctx, client.ObjectKey{Namespace: db.Namespace, Name: name}, secret); {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("look up Secret %s/%s for spec.secretName: %w", db.Namespace, name, err)
	}
	user := string(secret.Data["username"])
	if user == "" || !instance.ReservedUser(string(db.Spec.Engine), user) {
		return nil, nil
	}
	return field.ErrorList{field.Invalid(field.NewPath("spec", "secretName"), name, fmt.Sprintf(
		"Secret %s names the application user %q, which is reserved for the %s server's own accounts (the superuser, "+
			"Mooring's replication user %q and the system accounts): the application would get their rights. Put another "+
			"user name in the Secret's username key", name, user, db.Spec.Engine, instance.ReplicationUser))}, nil
}
