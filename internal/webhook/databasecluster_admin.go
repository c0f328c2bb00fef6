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

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/api/v1beta1"
)

// DatabaseComponent is the app.kubernetes.io/component of a DatabaseCluster's children
// (the DatabaseCluster controller's Component), its superuser Secret among them.
const DatabaseComponent = "database"

// adminSecretSuffix ends the name of a cluster's superuser Secret.
const adminSecretSuffix = "-admin"

// AdminSecretName is the Secret with a cluster's superuser password, Mooring's own (the
// DatabaseCluster controller creates it).
func AdminSecretName(clusterName string) string { return clusterName + adminSecretSuffix }

// IsAdminSecretOf tells Mooring's superuser Secret of cluster clusterName from a Secret
// of the same name somebody else made.
func IsAdminSecretOf(m metav1.Object, clusterName string) bool {
	l := m.GetLabels()
	return l[mooringv1.ManagedByLabel] == mooringv1.ManagedBy && l[mooringv1.InstanceLabel] == clusterName && l[mooringv1.ComponentLabel] == DatabaseComponent
}

// validateSecretNameNotAdmin refuses a spec.secretName that names a cluster's superuser
// Secret: the cluster's own "<name>-admin", the superuser Secret Mooring made for another
// cluster, or the one it will make for another cluster that exists. The application user
// would otherwise be the superuser, and a credential rotation would change the superuser's
// password under the cluster that owns it. The error is for a failed lookup.
func validateSecretNameNotAdmin(ctx context.Context, reader client.Reader, db *v1beta1.DatabaseCluster) (field.ErrorList, error) {
	name := db.Spec.SecretName
	if !strings.HasSuffix(name, adminSecretSuffix) || len(validation.IsDNS1123Subdomain(name)) > 0 {
		return nil, nil // an invalid name is refused by validateFields, not looked up
	}
	path := field.NewPath("spec", "secretName")
	refuse := func(whose string) field.ErrorList {
		return field.ErrorList{field.Invalid(path, name, fmt.Sprintf(
			"names %s superuser Secret, which Mooring keeps for itself: the application user would be the superuser. "+
				"Name another Secret, or leave spec.secretName unset for %s", whose, CredentialsSecretName(db.Name)))}
	}
	if name == AdminSecretName(db.Name) {
		return refuse("the cluster's own"), nil
	}
	if reader == nil {
		return nil, errors.New("the DatabaseCluster webhook has no reader to look up spec.secretName with")
	}
	other := strings.TrimSuffix(name, adminSecretSuffix)
	secret := &metav1.PartialObjectMetadata{}
	secret.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	switch err := reader.Get(ctx, client.ObjectKey{Namespace: db.Namespace, Name: name}, secret); {
	case err == nil:
		if IsAdminSecretOf(secret, other) {
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
