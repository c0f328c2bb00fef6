package v1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// StatusConditions returns the Backup's conditions for the reconcile engine.
func (b *Backup) StatusConditions() *[]metav1.Condition { return &b.Status.Conditions }

// SetObservedGeneration records the generation the engine reconciled.
func (b *Backup) SetObservedGeneration(g int64) { b.Status.ObservedGeneration = g }

// SetErrorPhase marks the Backup as failed to reconcile.
func (b *Backup) SetErrorPhase() { b.Status.Phase = BackupFailed }

// DefaultStorageSize is the size of the volume Mooring creates when the spec gives none.
const DefaultStorageSize = "5Gi"

// ClaimName is the PersistentVolumeClaim the dumps are written to: spec.storage.existingClaim,
// or "<name>-storage", which Mooring creates.
func (b *Backup) ClaimName() string {
	if b.Spec.Storage.ExistingClaim != "" {
		return b.Spec.Storage.ExistingClaim
	}
	return b.Name + "-storage"
}

// DumpPath is the directory in the volume the dumps are written to.
func (b *Backup) DumpPath() string {
	if b.Spec.BackupPath == "" {
		return "/backups" // the schema's default, for objects read before it applied
	}
	return b.Spec.BackupPath
}
