package webhook

import (
	"context"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/mooringhq/mooring/api/v1beta1"
)

// +kubebuilder:webhook:path=/mutate-mooring-dev-v1beta1-databasecluster,mutating=true,failurePolicy=fail,sideEffects=None,groups=mooring.dev,resources=databaseclusters,verbs=create;update,versions=v1beta1,name=mdatabasecluster-v1beta1.mooring.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-mooring-dev-v1beta1-databasecluster,mutating=false,failurePolicy=fail,sideEffects=None,groups=mooring.dev,resources=databaseclusters,verbs=create;update,versions=v1beta1,name=vdatabasecluster-v1beta1.mooring.dev,admissionReviewVersions=v1

// DatabaseClusterDefaulter fills in the defaults that depend on other fields. Requests for
// v1alpha1 objects arrive converted to v1beta1 (matchPolicy Equivalent), so one webhook
// serves both versions.
type DatabaseClusterDefaulter struct{}

// CredentialsSecretName is the Secret Mooring generates for a cluster unless the spec
// names another.
func CredentialsSecretName(clusterName string) string { return clusterName + "-credentials" }

// Default sets version by engine and the credentials Secret's name.
func (DatabaseClusterDefaulter) Default(_ context.Context, db *v1beta1.DatabaseCluster) error {
	if db.Spec.Version == "" {
		db.Spec.Version = DefaultVersion(db.Spec.Engine)
	}
	if db.Spec.SecretName == "" {
		db.Spec.SecretName = CredentialsSecretName(db.Name)
	}
	return nil
}

// DatabaseClusterValidator rejects what CEL cannot express.
type DatabaseClusterValidator struct{}

// ValidateCreate checks a new cluster.
func (DatabaseClusterValidator) ValidateCreate(_ context.Context, db *v1beta1.DatabaseCluster) (admission.Warnings, error) {
	return nil, validateDatabaseCluster(db)
}

// ValidateUpdate checks a changed cluster. A version may change within the supported set
// (an upgrade is the image's business); engine and storage rules are CEL's.
func (DatabaseClusterValidator) ValidateUpdate(_ context.Context, _, db *v1beta1.DatabaseCluster) (admission.Warnings, error) {
	return nil, validateDatabaseCluster(db)
}

// ValidateDelete allows every deletion; finalizers protect the data.
func (DatabaseClusterValidator) ValidateDelete(context.Context, *v1beta1.DatabaseCluster) (admission.Warnings, error) {
	return nil, nil
}

func validateDatabaseCluster(db *v1beta1.DatabaseCluster) error {
	var errs field.ErrorList
	versionPath := field.NewPath("spec", "version")
	if supported := SupportedVersions(db.Spec.Engine); !slices.Contains(supported, db.Spec.Version) {
		errs = append(errs, field.NotSupported(versionPath, db.Spec.Version, supported))
	}
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(v1beta1.GroupVersion.WithKind("DatabaseCluster").GroupKind(), db.Name, errs)
}
