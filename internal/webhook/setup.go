package webhook

import (
	ctrl "sigs.k8s.io/controller-runtime"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/api/v1beta1"
)

// Setup registers every webhook with the manager's webhook server: App, CacheInstance and
// Backup validation, DatabaseCluster defaulting and validation, and DatabaseCluster conversion
// (/convert, registered because v1beta1 is a Hub and v1alpha1 Convertible). The
// validators read through the API reader and review the requester's rights through the
// manager's client, which creates SubjectAccessReviews directly (no cache).
func Setup(mgr ctrl.Manager) error {
	if err := ctrl.NewWebhookManagedBy(mgr, &mooringv1.App{}).
		WithValidator(AppValidator{Reader: mgr.GetAPIReader(), Reviewer: mgr.GetClient(), Children: mgr.GetClient()}).
		Complete(); err != nil {
		return err
	}
	if err := ctrl.NewWebhookManagedBy(mgr, &mooringv1.CacheInstance{}).
		WithValidator(CacheInstanceValidator{}).
		Complete(); err != nil {
		return err
	}
	if err := ctrl.NewWebhookManagedBy(mgr, &mooringv1.Backup{}).
		WithValidator(BackupValidator{Reader: mgr.GetAPIReader(), Reviewer: mgr.GetClient()}).
		Complete(); err != nil {
		return err
	}
	return ctrl.NewWebhookManagedBy(mgr, &v1beta1.DatabaseCluster{}).
		WithDefaulter(DatabaseClusterDefaulter{}).
		WithValidator(DatabaseClusterValidator{Reader: mgr.GetAPIReader(), Reviewer: mgr.GetClient()}).
		Complete()
}
