package webhook

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/api/v1beta1"
	"github.com/mooringhq/mooring/internal/controller/database"
	"github.com/mooringhq/mooring/internal/schedule"
)

// +kubebuilder:webhook:path=/validate-mooring-dev-v1-backup,mutating=false,failurePolicy=fail,sideEffects=None,groups=mooring.dev,resources=backups,verbs=create;update,versions=v1,name=vbackup-v1.mooring.dev,admissionReviewVersions=v1

// MaxBackupNameLength keeps the Backup's CronJob valid: the CronJob controller appends an
// 11-character suffix to name its Jobs, which must stay within 63 characters.
const MaxBackupNameLength = mooringv1.MaxBackupNameLength

// BackupValidator checks what the Backup's schema cannot: that the schedule parses and
// runs (neither never nor more often than backups can finish), that its references can
// resolve, that its claim is not a database's own data volume, and that the requesting
// user may get the DatabaseCluster it dumps and the claim it writes to.
type BackupValidator struct {
	// Reader looks up the claim spec.storage.existingClaim names and the DatabaseCluster
	// its name points at; nil skips those look-ups (the checks by name alone still run).
	Reader client.Reader
	// Reviewer creates the SubjectAccessReviews for the requesting user.
	Reviewer Reviewer
}

// ValidateCreate checks a new Backup.
func (v BackupValidator) ValidateCreate(ctx context.Context, b *mooringv1.Backup) (admission.Warnings, error) {
	return v.ValidateUpdate(ctx, nil, b)
}

// ValidateUpdate checks a changed Backup (old nil on create). References the Backup
// already had are not checked again (newReferences), nor is a schedule, database or claim
// it already had: a Backup admitted before a check existed can still be edited, suspended
// and deleted (its finalizer removed), and its status says what is wrong.
func (v BackupValidator) ValidateUpdate(ctx context.Context, old, b *mooringv1.Backup) (admission.Warnings, error) {
	var had []objectRef
	if old != nil {
		had = backupReferences(old)
	}
	denied, err := checkReferences(ctx, v.Reviewer, b.Namespace, newReferences(backupReferences(b), had))
	if err != nil {
		return nil, err
	}
	errs := append(field.ErrorList{}, denied...)
	errs = append(errs, validateBackupSpec(old, b)...)
	if c := b.Spec.Storage.ExistingClaim; c != "" && (old == nil || c != old.Spec.Storage.ExistingClaim) && len(errs) == 0 {
		claimErrs, err := v.checkClaimOwner(ctx, b)
		if err != nil {
			return nil, err
		}
		errs = append(errs, claimErrs...)
	}
	return nil, invalidBackup(b, errs)
}

// ValidateDelete allows every deletion; the cleanup finalizer does what the policy says.
func (BackupValidator) ValidateDelete(context.Context, *mooringv1.Backup) (admission.Warnings, error) {
	return nil, nil
}

func invalidBackup(b *mooringv1.Backup, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(mooringv1.GroupVersion.WithKind("Backup").GroupKind(), b.Name, errs)
}

// validateBackupSpec checks what needs no look-up; a field the Backup already had (old,
// nil on create) is not checked again.
func validateBackupSpec(old, b *mooringv1.Backup) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if old == nil || b.Spec.Schedule != old.Spec.Schedule {
		if err := schedule.Validate(b.Spec.Schedule); err != nil {
			errs = append(errs, field.Invalid(spec.Child("schedule"), b.Spec.Schedule, err.Error()))
		}
	}
	if old == nil {
		errs = append(errs, backupNameRule.errors(b.Name)...)
	}
	if name := b.Spec.DatabaseRef.Name; name != "" && (old == nil || name != old.Spec.DatabaseRef.Name) {
		if msg := databaseNameProblem(name); msg != "" {
			errs = append(errs, field.Invalid(spec.Child("databaseRef", "name"), name, msg))
		}
	}
	if c := b.Spec.Storage.ExistingClaim; c != "" && (old == nil || c != old.Spec.Storage.ExistingClaim) {
		path := spec.Child("storage", "existingClaim")
		if msgs := validation.IsDNS1123Subdomain(c); len(msgs) > 0 {
			errs = append(errs, field.Invalid(path, c, "can never name a PersistentVolumeClaim, whose name is a DNS-1123 subdomain in the Backup's namespace: "+strings.Join(msgs, "; ")))
		} else if db, ok := dataVolumeOf(c); ok && db == b.Spec.DatabaseRef.Name {
			errs = append(errs, field.Invalid(path, c, claimOfDatabaseMessage(c, db)))
		}
	}
	return errs
}

// databaseNameProblem says why a name can never be a DatabaseCluster's in the Backup's
// namespace ("" when it can): a DatabaseCluster's name is a DNS-1035 label of at most
// v1beta1.MaxNameLength characters, and a reference never reaches another namespace.
func databaseNameProblem(name string) string {
	why := "can never name a DatabaseCluster, whose name is a DNS-1035 label of at most " +
		fmt.Sprint(v1beta1.MaxNameLength) + " characters in the Backup's namespace (a reference cannot reach another namespace)"
	if strings.Contains(name, "/") {
		return why + ": must not contain '/'"
	}
	if len(name) > v1beta1.MaxNameLength {
		return fmt.Sprintf("%s: %d characters", why, len(name))
	}
	if msgs := validation.IsDNS1035Label(name); len(msgs) > 0 {
		return why + ": " + strings.Join(msgs, "; ")
	}
	return ""
}

// dataVolumeName matches the name of a DatabaseCluster's data volume: the StatefulSet
// controller names the claims of its volumeClaimTemplate <template>-<set>-<ordinal>.
var dataVolumeName = regexp.MustCompile(`^` + database.DataVolume + `-([a-z]([-a-z0-9]*[a-z0-9])?)-(0|[1-9][0-9]*)$`)

// dataVolumeOf returns the DatabaseCluster whose data volume a claim's name would be.
func dataVolumeOf(claim string) (string, bool) {
	m := dataVolumeName.FindStringSubmatch(claim)
	if m == nil {
		return "", false
	}
	return m[1], true
}

func claimOfDatabaseMessage(claim, db string) string {
	return fmt.Sprintf("is %s, a data volume of DatabaseCluster %s: a Backup must not write its dumps into a database's own volume "+
		"(the dumps would share the database's disk and fail with it); name another claim, or leave existingClaim unset and "+
		"set spec.storage.size for a volume Mooring creates", claim, db)
}

// checkClaimOwner refuses a claim that is a DatabaseCluster's data volume: one carrying
// Mooring's database labels, or one named data-<name>-<ordinal> while DatabaseCluster
// <name> exists (its StatefulSet may not have made that claim yet).
func (v BackupValidator) checkClaimOwner(ctx context.Context, b *mooringv1.Backup) (field.ErrorList, error) {
	if v.Reader == nil {
		return nil, nil
	}
	name := b.Spec.Storage.ExistingClaim
	path := field.NewPath("spec", "storage", "existingClaim")
	claim := &metav1.PartialObjectMetadata{}
	claim.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim"))
	switch err := v.Reader.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: name}, claim); {
	case apierrors.IsNotFound(err):
	case err != nil:
		return nil, fmt.Errorf("look up PersistentVolumeClaim %s/%s for spec.storage.existingClaim: %w", b.Namespace, name, err)
	default:
		if l := claim.Labels; l[mooringv1.ManagedByLabel] == mooringv1.ManagedBy && l[mooringv1.ComponentLabel] == database.Component {
			return field.ErrorList{field.Invalid(path, name, claimOfDatabaseMessage(name, l[mooringv1.InstanceLabel]))}, nil
		}
	}
	db, ok := dataVolumeOf(name)
	if !ok {
		return nil, nil
	}
	switch err := v.Reader.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: db}, &v1beta1.DatabaseCluster{}); {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("look up DatabaseCluster %s/%s for spec.storage.existingClaim: %w", b.Namespace, db, err)
	}
	return field.ErrorList{field.Invalid(path, name, claimOfDatabaseMessage(name, db))}, nil
}
