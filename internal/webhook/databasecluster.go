package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/api/v1alpha1"
	"github.com/mooringhq/mooring/api/v1beta1"
)

// +kubebuilder:webhook:path=/mutate-mooring-dev-v1beta1-databasecluster,mutating=true,failurePolicy=fail,sideEffects=None,groups=mooring.dev,resources=databaseclusters,verbs=create;update,versions=v1beta1,name=mdatabasecluster-v1beta1.mooring.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-mooring-dev-v1beta1-databasecluster,mutating=false,failurePolicy=fail,sideEffects=None,groups=mooring.dev,resources=databaseclusters,verbs=create;update,versions=v1beta1,name=vdatabasecluster-v1beta1.mooring.dev,admissionReviewVersions=v1
// Deletes go to the same handler through a webhook of their own that fails open: its only
// check (ValidateDelete) guards against a foreground deletion, and a cluster must stay
// deletable, and its namespace too, while the operator is down or uninstalled.
// +kubebuilder:webhook:path=/validate-mooring-dev-v1beta1-databasecluster,mutating=false,failurePolicy=ignore,sideEffects=None,groups=mooring.dev,resources=databaseclusters,verbs=delete,versions=v1beta1,name=vdatabasecluster-delete-v1beta1.mooring.dev,admissionReviewVersions=v1,timeoutSeconds=5

// DatabaseClusterDefaulter fills in the defaults that depend on other fields. Requests for
// v1alpha1 objects arrive converted to v1beta1 (matchPolicy Equivalent), so one webhook
// serves both versions.
type DatabaseClusterDefaulter struct{}

// Default sets version by engine and the credentials Secret's name.
func (DatabaseClusterDefaulter) Default(_ context.Context, db *v1beta1.DatabaseCluster) error {
	if db.Spec.Version == "" {
		db.Spec.Version = DefaultVersion(db.Spec.Engine)
	}
	if db.Spec.SecretName == "" {
		db.Spec.SecretName = v1beta1.CredentialsSecretName(db.Name)
	}
	return nil
}

// The DatabaseCluster webhook reads the Backup a new cluster's spec.bootstrap names, and
// the DatabaseCluster that Backup dumps.
// +kubebuilder:rbac:groups=mooring.dev,resources=backups;databaseclusters,verbs=get

// DatabaseClusterValidator rejects what CEL cannot express (a new cluster's name that its
// children cannot carry, databaseClusterNameRule, among it), and what CEL checks only for
// requests made in v1beta1.
type DatabaseClusterValidator struct {
	// Reader looks up the Backup a new cluster's spec.bootstrap names. Setup gives it the
	// manager's API reader, which reads from the API server: the cache might not have a
	// Backup created a moment before the cluster yet.
	Reader client.Reader
	// Reviewer creates the SubjectAccessReviews that check the requesting user may get
	// the credentials Secret spec.secretName names and the Backup spec.bootstrap names.
	Reviewer Reviewer
}

// ValidateCreate checks a new cluster, and the Backup it is to be restored from.
func (v DatabaseClusterValidator) ValidateCreate(ctx context.Context, db *v1beta1.DatabaseCluster) (admission.Warnings, error) {
	bootstrapErrs, err := v.validateBootstrap(ctx, db)
	if err != nil {
		return nil, err
	}
	adminErrs, err := validateSecretNameNotAdmin(ctx, v.Reader, db)
	if err != nil {
		return nil, err
	}
	bootstrapErrs = append(bootstrapErrs, adminErrs...)
	reservedErrs, err := validateAppUserNotReserved(ctx, v.Reader, db)
	if err != nil {
		return nil, err
	}
	bootstrapErrs = append(bootstrapErrs, reservedErrs...)
	denied, err := checkReferences(ctx, v.Reviewer, db.Namespace, databaseClusterReferences(db))
	if err != nil {
		return nil, err
	}
	return nil, validateDatabaseCluster(db, append(bootstrapErrs, denied...)...)
}

// validateBootstrap checks, at creation, the Backup spec.bootstrap.backup names: that it
// exists in the cluster's namespace and dumps a database of the cluster's engine. The
// error is for a failed lookup, which the API server reports as the webhook's failure.
func (v DatabaseClusterValidator) validateBootstrap(ctx context.Context, db *v1beta1.DatabaseCluster) (field.ErrorList, error) {
	if db.Spec.Bootstrap == nil || db.Spec.Bootstrap.Backup == nil {
		return nil, nil // the schema requires backup; nothing to look up without it
	}
	if v.Reader == nil {
		return nil, errors.New("the DatabaseCluster webhook has no reader to look up spec.bootstrap.backup with")
	}
	ref := db.Spec.Bootstrap.Backup
	path := field.NewPath("spec", "bootstrap", "backup", "name")
	backup := &mooringv1.Backup{}
	switch err := v.Reader.Get(ctx, client.ObjectKey{Namespace: db.Namespace, Name: ref.Name}, backup); {
	case apierrors.IsNotFound(err):
		return field.ErrorList{field.Invalid(path, ref.Name, fmt.Sprintf("Backup %s not found in namespace %s", ref.Name, db.Namespace))}, nil
	case err != nil:
		return nil, fmt.Errorf("look up Backup %s/%s for spec.bootstrap.backup.name: %w", db.Namespace, ref.Name, err)
	}

	// The Backup's engine is its database's. When that DatabaseCluster is gone (a cluster
	// is often recreated from its own Backup), nothing else tells the engine: the Backup's
	// status does not record it, nor do the dump's file names. The cluster is then
	// admitted, and the restore Job reports a dump of another engine.
	source := &v1beta1.DatabaseCluster{}
	switch err := v.Reader.Get(ctx, client.ObjectKey{Namespace: db.Namespace, Name: backup.Spec.DatabaseRef.Name}, source); {
	case apierrors.IsNotFound(err):
	case err != nil:
		return nil, fmt.Errorf("look up DatabaseCluster %s/%s, the database of Backup %s: %w",
			db.Namespace, backup.Spec.DatabaseRef.Name, ref.Name, err)
	case source.Spec.Engine != db.Spec.Engine:
		return field.ErrorList{field.Invalid(path, ref.Name, fmt.Sprintf(
			"Backup %s dumps DatabaseCluster %s, a %s database, and its dumps cannot be restored into spec.engine %s",
			ref.Name, source.Name, source.Spec.Engine, db.Spec.Engine))}, nil
	}

	// spec.bootstrap.backup.dump is not checked here: the Backup's status does not list its
	// dumps, which are files in its volume. The restore Job reports a dump it cannot find.
	return nil, nil
}

// ValidateUpdate checks a changed cluster. CEL on the v1beta1 schema guards the update
// rules only for requests made in v1beta1: a v1alpha1 write (its schema has no storage,
// secretName or deletionPolicy, which it carries in the conversion annotation) reaches the
// API server's storage without them. This webhook sees every version's request converted
// to v1beta1, so it applies the same rules, with the same messages, whatever the version.
// References the cluster already had are not checked again (newReferences).
func (v DatabaseClusterValidator) ValidateUpdate(ctx context.Context, old, db *v1beta1.DatabaseCluster) (admission.Warnings, error) {
	denied, err := checkReferences(ctx, v.Reviewer, db.Namespace,
		newReferences(databaseClusterReferences(db), databaseClusterReferences(old)))
	if err != nil {
		return nil, err
	}
	if db.Spec.SecretName != old.Spec.SecretName {
		adminErrs, err := validateSecretNameNotAdmin(ctx, v.Reader, db)
		if err != nil {
			return nil, err
		}
		denied = append(denied, adminErrs...)
		reservedErrs, err := validateAppUserNotReserved(ctx, v.Reader, db)
		if err != nil {
			return nil, err
		}
		denied = append(denied, reservedErrs...)
	}
	return nil, invalid(db, append(validateDatabaseClusterUpdate(old, db, requestVersion(ctx)), denied...))
}

// requestVersion is the API version the client wrote in (the webhook is sent every
// request converted to v1beta1), v1beta1 when the request does not say.
func requestVersion(ctx context.Context) string {
	req, err := admission.RequestFromContext(ctx)
	switch {
	case err != nil:
		return v1beta1.GroupVersion.Version
	case req.RequestKind != nil:
		return req.RequestKind.Version
	default:
		return req.Kind.Version
	}
}

// ValidateDelete refuses foreground deletion of a cluster that is to take a final
// snapshot: the garbage collector then deletes the cluster's StatefulSet and pods at once,
// while the final-snapshot finalizer holds the cluster, and the snapshot Job would find no
// database to dump. The cluster would stay, its snapshot failing, until somebody skipped
// it. Every other deletion is allowed; finalizers protect the data.
func (DatabaseClusterValidator) ValidateDelete(ctx context.Context, db *v1beta1.DatabaseCluster) (admission.Warnings, error) {
	if db.Spec.DeletionPolicy != v1beta1.DeletionSnapshot || db.Annotations[v1beta1.SkipFinalSnapshotAnnotation] == "true" {
		return nil, nil
	}
	if propagation(ctx) != metav1.DeletePropagationForeground {
		return nil, nil
	}
	return nil, apierrors.NewForbidden(v1beta1.GroupVersion.WithResource("databaseclusters").GroupResource(), db.Name, fmt.Errorf(
		"deletionPolicy is Snapshot, and foreground deletion (propagationPolicy Foreground, kubectl delete --cascade=foreground) "+
			"would delete the database's StatefulSet and pods before the final snapshot is taken: delete it with background propagation "+
			"(kubectl's default, --cascade=background), or annotate it %s=true to delete it without a final snapshot", v1beta1.SkipFinalSnapshotAnnotation))
}

// propagation is the propagation policy of the DELETE request in ctx, "" when it sets
// none (the API server's default for a custom resource is Background). The legacy
// orphanDependents=true is Orphan.
func propagation(ctx context.Context) metav1.DeletionPropagation {
	req, err := admission.RequestFromContext(ctx)
	if err != nil || len(req.Options.Raw) == 0 {
		return ""
	}
	opts := &metav1.DeleteOptions{}
	if err := json.Unmarshal(req.Options.Raw, opts); err != nil {
		return ""
	}
	switch {
	case opts.PropagationPolicy != nil:
		return *opts.PropagationPolicy
	case opts.OrphanDependents != nil && *opts.OrphanDependents: //nolint:staticcheck // still sent by old clients
		return metav1.DeletePropagationOrphan
	}
	return ""
}

// validateDatabaseCluster checks a new cluster's name and fields, with more errors found
// elsewhere.
func validateDatabaseCluster(db *v1beta1.DatabaseCluster, more ...*field.Error) error {
	errs := append(databaseClusterNameRule.errors(db.Name), validateFields(nil, db)...)
	return invalid(db, append(errs, more...))
}

// validateFields checks db's fields on their own: every field on create (old nil), and on
// update only the fields that changed, so that an object stored before a rule tightened
// is not refused every later write.
func validateFields(old, db *v1beta1.DatabaseCluster) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	// An unchanged version is not checked against the list: once a version leaves it, its
	// clusters must still take updates (a finalizer's removal among them).
	if supported := SupportedVersions(db.Spec.Engine); (old == nil || db.Spec.Version != old.Spec.Version) &&
		!slices.Contains(supported, db.Spec.Version) {
		errs = append(errs, field.NotSupported(spec.Child("version"), db.Spec.Version, supported))
	}
	// The rules of the v1beta1 schema that a v1alpha1 object, carrying these fields in its
	// conversion annotation, is never checked against.
	if size := db.Spec.Storage.Size; size != nil && (old == nil || !sameQuantity(old.Spec.Storage.Size, size)) && size.Sign() <= 0 {
		errs = append(errs, field.Invalid(spec.Child("storage", "size"), size.String(), "must be greater than zero"))
	}
	if p := db.Spec.DeletionPolicy; p != "" && (old == nil || p != old.Spec.DeletionPolicy) && !slices.Contains(deletionPolicies, p) {
		errs = append(errs, field.NotSupported(spec.Child("deletionPolicy"), p, deletionPolicies))
	}
	if name := db.Spec.SecretName; name != "" && (old == nil || name != old.Spec.SecretName) {
		for _, msg := range validation.IsDNS1123Subdomain(name) {
			errs = append(errs, field.Invalid(spec.Child("secretName"), name, msg))
		}
	}
	if name := db.Spec.Storage.StorageClassName; name != nil && (old == nil || !equalPtr(old.Spec.Storage.StorageClassName, name)) {
		for _, msg := range validation.IsDNS1123Subdomain(*name) {
			errs = append(errs, field.Invalid(spec.Child("storage", "storageClassName"), *name, msg))
		}
	}
	if r := db.Spec.Resources; r != nil && (old == nil || !equality.Semantic.DeepEqual(old.Spec.Resources, r)) {
		errs = append(errs, databaseResources(spec.Child("resources"), r)...)
	}
	errs = append(errs, validateConversionAnnotation(old, db)...)
	return errs
}

var deletionPolicies = []v1beta1.DeletionPolicy{v1beta1.DeletionRetain, v1beta1.DeletionDelete, v1beta1.DeletionSnapshot}

// defaultStorageSize is the v1beta1 schema's default for spec.storage.size, which the API
// server fills in before admission.
var defaultStorageSize = resource.MustParse("1Gi")

// validateDatabaseClusterUpdate applies the v1beta1 update rules (the CEL rules of
// api/v1beta1, same messages) to a change made in any version; version is the one the
// request was made in.
func validateDatabaseClusterUpdate(old, db *v1beta1.DatabaseCluster, version string) field.ErrorList {
	errs := validateFields(old, db)
	spec := field.NewPath("spec")
	if db.Spec.Engine != old.Spec.Engine {
		errs = append(errs, field.Invalid(spec.Child("engine"), db.Spec.Engine, "engine is immutable"))
	}
	if old.Spec.SecretName != "" && db.Spec.SecretName != old.Spec.SecretName {
		// A new name would make Mooring generate a new password over the existing data.
		errs = append(errs, field.Invalid(spec.Child("secretName"), db.Spec.SecretName, "secretName is immutable once set"))
	}
	if err := validateVersionChange(old, db); err != nil {
		errs = append(errs, err)
	}
	// The data came from the Backup once, at creation; naming another afterwards (or
	// dropping it) would claim data the cluster does not have.
	if !equality.Semantic.DeepEqual(old.Spec.Bootstrap, db.Spec.Bootstrap) {
		errs = append(errs, field.Forbidden(spec.Child("bootstrap"), "bootstrap is immutable: it can be set only when the cluster is created"))
	}
	// A StatefulSet's volume claim template cannot change, nor can a bound PVC's class. Unset
	// is a value too: the volumes then have the cluster's default class, which naming one
	// later would not change.
	if oldClass := old.Spec.Storage.StorageClassName; !equalPtr(oldClass, db.Spec.Storage.StorageClassName) {
		errs = append(errs, field.Invalid(spec.Child("storage", "storageClassName"), ptr.Deref(db.Spec.Storage.StorageClassName, ""),
			"storage.storageClassName is immutable: the data volumes keep the class (or the cluster default) they were created with"))
	}
	if oldSize, size := effectiveSize(old), effectiveSize(db); size.Cmp(oldSize) < 0 {
		errs = append(errs, field.Invalid(spec.Child("storage", "size"), size.String(), "storage.size may grow but never shrink"))
	}
	// v1alpha1 has no deletionPolicy: its objects carry it in the conversion annotation, and
	// one written without the annotation (an old manifest replaced) comes with the
	// default, Retain. Its change is taken only from v1beta1.
	if version == v1alpha1.GroupVersion.Version && db.Spec.DeletionPolicy != old.Spec.DeletionPolicy {
		errs = append(errs, field.Forbidden(spec.Child("deletionPolicy"), fmt.Sprintf(
			"deletionPolicy cannot be changed through v1alpha1, which has no such field (from %s to %s: a v1alpha1 object without the %s annotation resets it); change it through v1beta1",
			old.Spec.DeletionPolicy, db.Spec.DeletionPolicy, v1alpha1.ConversionAnnotation)))
	}
	return errs
}

// effectiveSize is the storage size the cluster is stored with: the schema's default when
// the request has none.
func effectiveSize(db *v1beta1.DatabaseCluster) resource.Quantity {
	if db.Spec.Storage.Size != nil {
		return *db.Spec.Storage.Size
	}
	return defaultStorageSize
}

func sameQuantity(a, b *resource.Quantity) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Cmp(*b) == 0
}

func equalPtr[T comparable](a, b *T) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func invalid(db *v1beta1.DatabaseCluster, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(v1beta1.GroupVersion.WithKind("DatabaseCluster").GroupKind(), db.Name, errs)
}
