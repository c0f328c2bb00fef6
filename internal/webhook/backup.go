package webhook

import (
	"context"
	"fmt"
	"strings"

	"github.com/robfig/cron/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
)

// +kubebuilder:webhook:path=/validate-mooring-dev-v1-backup,mutating=false,failurePolicy=fail,sideEffects=None,groups=mooring.dev,resources=backups,verbs=create;update,versions=v1,name=vbackup-v1.mooring.dev,admissionReviewVersions=v1

// MaxBackupNameLength keeps the Backup's CronJob valid: the CronJob controller appends an
// 11-character suffix to name its Jobs, which must stay within 63 characters.
const MaxBackupNameLength = mooringv1.MaxBackupNameLength

// BackupValidator checks what the Backup's schema cannot: that the schedule parses, and
// that the requesting user may get the DatabaseCluster it dumps and the claim it writes to.
type BackupValidator struct {
	// Reviewer creates the SubjectAccessReviews for the requesting user.
	Reviewer Reviewer
}

// ValidateCreate checks a new Backup.
func (v BackupValidator) ValidateCreate(ctx context.Context, b *mooringv1.Backup) (admission.Warnings, error) {
	return v.ValidateUpdate(ctx, nil, b)
}

// ValidateUpdate checks a changed Backup (old nil on create). References the Backup
// already had are not checked again (newReferences).
func (v BackupValidator) ValidateUpdate(ctx context.Context, old, b *mooringv1.Backup) (admission.Warnings, error) {
	var had []objectRef
	if old != nil {
		had = backupReferences(old)
	}
	denied, err := checkReferences(ctx, v.Reviewer, b.Namespace, newReferences(backupReferences(b), had))
	if err != nil {
		return nil, err
	}
	return nil, validateBackup(b, denied...)
}

// ValidateDelete allows every deletion; the cleanup finalizer does what the policy says.
func (BackupValidator) ValidateDelete(context.Context, *mooringv1.Backup) (admission.Warnings, error) {
	return nil, nil
}

func validateBackup(b *mooringv1.Backup, more ...*field.Error) error {
	errs := append(field.ErrorList{}, more...)
	if err := ValidateSchedule(b.Spec.Schedule); err != nil {
		errs = append(errs, field.Invalid(field.NewPath("spec", "schedule"), b.Spec.Schedule, err.Error()))
	}
	if len(b.Name) > MaxBackupNameLength {
		errs = append(errs, field.TooLong(field.NewPath("metadata", "name"), b.Name, MaxBackupNameLength))
	}
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(mooringv1.GroupVersion.WithKind("Backup").GroupKind(), b.Name, errs)
}

// ValidateSchedule accepts what the CronJob controller accepts: a standard five-field cron
// expression or a descriptor such as @daily, without a time zone prefix (the CronJob API
// rejects TZ= and CRON_TZ= in schedules).
func ValidateSchedule(schedule string) error {
	if strings.Contains(schedule, "TZ") {
		return fmt.Errorf("must not set a time zone (TZ= or CRON_TZ=); schedules run in the kube-controller-manager's time zone")
	}
	if _, err := cron.ParseStandard(schedule); err != nil {
		return fmt.Errorf("must be a cron schedule such as \"0 3 * * *\" or \"@daily\": %w", err)
	}
	return nil
}
