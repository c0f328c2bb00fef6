package webhook

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mooringhq/mooring/api/v1beta1"
	"github.com/mooringhq/mooring/internal/controller/database"
)

// validateSecretNameNotAdmin refuses a spec.secretName that names a cluster's superuser
// Secret: the cluster's own "<name>-admin", the superuser Secret Mooring made for another
// cluster, or the one it will make for another cluster that exists. The application user
// would otherwise be the superuser, and a credential rotation would change the superuser's
// password under the cluster that owns it. The error is for a failed lookup.
func validateSecretNameNotAdmin(ctx context.Context, reader client.Reader, db *v1beta1.DatabaseCluster) (field.ErrorList, error) {
	name := db.Spec.SecretName
	if !strings.HasSuffix(name, v1beta1.AdminSecretSuffix) || len(validation.IsDNS1123Subdomain(name)) > 0 {
		return nil, nil // an invalid name is refused by validateFields, not looked up
	}
	path := field.NewPath("spec", "secretName")
	refuse := func(whose string) field.ErrorList {
		return field.ErrorList{field.Invalid(path, name, fmt.Sprintf(
			"names %s superuser Secret, which Mooring keeps for itself: the application user would be the superuser. "+
				"Name another Secret, or leave spec.secretName unset for %s", whose, v1beta1.CredentialsSecretName(db.Name)))}
	}
	if name == v1beta1.AdminSecretName(db.Name) {
		return refuse("the cluster's own"), nil
	}
	if reader == nil {
		return nil, errors.New("the DatabaseCluster webhook has no reader to look up spec.secretName with")
	}
	other := strings.TrimSuffix(name, v1beta1.AdminSecretSuffix)
	secret := &metav1.PartialObjectMetadata{}
	secret.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	switch err := reader.Get(ctx, client.ObjectKey{Namespace: db.Namespace, Name: name}, secret); {
	case err == nil:
		if database.IsAdminSecretOf(secret, other) {
			return refuse(fmt.Sprintf("DatabaseCluster %s's", other)), nil
		}
		return nil, nil // a Secret of the user's that only ends in -admin
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("look up Secret %s/%s for spec.secretName: %w", db.Namespace, name, err)
	}
	// No such Secret yet: a cluster that exists will have it.
	switch err := reader.Get(ctx, client.ObjectKey{Namespace: db.Namespace, Name: other}, &v1beta1.DatabaseCluster{}); {
	case err == nil:
		return refuse(fmt.Sprintf("DatabaseCluster %s's", other)), nil
	case apierrors.IsNotFound(err):
		return nil, nil
	default:
		return nil, fmt.Errorf("look up DatabaseCluster %s/%s for spec.secretName: %w", db.Namespace, other, err)
	}
}
