package v1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DatabaseReference names a DatabaseCluster in the Backup's namespace.
type DatabaseReference struct {
	// Name of the DatabaseCluster.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +required
	Name string `json:"name"`
}

// BackupRetention says how many dumps are kept.
type BackupRetention struct {
	// KeepLast is how many of the newest dumps are kept; older ones are deleted after
	// each successful backup.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:default=7
	// +optional
	KeepLast int32 `json:"keepLast,omitempty"`
}

// BackupStorage is where the dumps are written: a volume Mooring creates, or one you have.
// +kubebuilder:validation:XValidation:rule="!(has(self.size) && has(self.existingClaim))",message="set either size (Mooring creates the volume) or existingClaim, not both"
type BackupStorage struct {
	// Size of the volume Mooring creates, PVC "<name>-storage"; 5Gi when neither this nor
	// existingClaim is set. The volume is kept when the Backup is deleted with
	// cleanupPolicy Retain.
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).isGreaterThan(quantity('0'))",message="must be greater than zero"
	// +optional
	Size *resource.Quantity `json:"size,omitempty"`

	// ExistingClaim names a PersistentVolumeClaim in the Backup's namespace to write the
	// dumps to instead. Until it exists the Backup is Pending (reason ClaimNotFound) and
	// has no CronJob.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	ExistingClaim string `json:"existingClaim,omitempty"`
}

// CleanupPolicy says what happens to the dumps when a Backup is deleted.
// +kubebuilder:validation:Enum=Retain;Delete
type CleanupPolicy string

// The cleanup policies.
const (
	// CleanupRetain keeps the dumps and the volume.
	CleanupRetain CleanupPolicy = "Retain"
	// CleanupDelete removes the dumps under backupPath (and the volume Mooring created)
	// before the Backup goes.
	CleanupDelete CleanupPolicy = "Delete"
)

// BackupSpec is a schedule of logical dumps of one DatabaseCluster.
type BackupSpec struct {
	// DatabaseRef names the DatabaseCluster, in the same namespace, to back up.
	// +required
	DatabaseRef DatabaseReference `json:"databaseRef"`

	// Schedule in cron format ("0 3 * * *", "@daily"), in the time zone of the
	// kube-controller-manager.
	// +kubebuilder:validation:MinLength=1
	// +required
	Schedule string `json:"schedule"`

	// BackupPath is the directory in the backup volume the dumps are written to, as
	// <backupPath>/<backup name>-<timestamp>.sql.gz: an absolute path, relative to the
	// volume's root.
	// +kubebuilder:validation:Pattern=`^/[A-Za-z0-9._/-]*$`
	// +kubebuilder:validation:XValidation:rule="!self.contains('/../') && !self.endsWith('/..')",message="backupPath must stay inside the volume (no .. segments)"
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:default="/backups"
	// +optional
	BackupPath string `json:"backupPath,omitempty"`

	// Retention says how many dumps are kept.
	// +kubebuilder:default={}
	// +optional
	Retention BackupRetention `json:"retention,omitempty"`

	// Storage is the volume the dumps are written to.
	// +kubebuilder:default={}
	// +optional
	Storage BackupStorage `json:"storage,omitempty"`

	// Suspend stops scheduled backups (on-demand ones still run) until set to false.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// CleanupPolicy says what happens to the dumps when the Backup is deleted: Retain
	// (keep them) or Delete (remove them first).
	// +kubebuilder:default=Retain
	// +optional
	CleanupPolicy CleanupPolicy `json:"cleanupPolicy,omitempty"`
}

// BackupPhase summarises a Backup's state in one word.
// +kubebuilder:validation:Enum=Pending;Scheduled;Suspended;Failed
type BackupPhase string

// The phases of a Backup.
const (
	// BackupPending means the database is missing or not Running yet: nothing is scheduled.
	BackupPending BackupPhase = "Pending"
	// BackupScheduled means backups run on the schedule.
	BackupScheduled BackupPhase = "Scheduled"
	// BackupSuspended means spec.suspend stops scheduled backups.
	BackupSuspended BackupPhase = "Suspended"
	// BackupFailed means the last backup failed, or Mooring could not reconcile the
	// Backup; the conditions say which.
	BackupFailed BackupPhase = "Failed"
)

// BackupStatus is what Mooring observed of the Backup's jobs.
type BackupStatus struct {
	// LastScheduleTime is when the schedule last started a backup.
	// +optional
	LastScheduleTime *metav1.Time `json:"lastScheduleTime,omitempty"`

	// LastSuccessfulTime is when a backup (scheduled or on demand) last completed.
	// +optional
	LastSuccessfulTime *metav1.Time `json:"lastSuccessfulTime,omitempty"`

	// LastFailedTime is when a backup last failed.
	// +optional
	LastFailedTime *metav1.Time `json:"lastFailedTime,omitempty"`

	// LastBackupJob is the name of the Job of the most recent backup.
	// +optional
	LastBackupJob string `json:"lastBackupJob,omitempty"`

	// Phase is Pending, Scheduled, Suspended or Failed.
	// +optional
	Phase BackupPhase `json:"phase,omitempty"`

	// ObservedGeneration is the generation of the spec last reconciled successfully.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready, LastBackupSucceeded, Paused while paused, and Contested while
	// another writer keeps changing a field of a child.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Backup dumps a DatabaseCluster on a schedule (pg_dump or mysqldump, gzipped) into a
// volume, keeps the newest dumps, and takes one more whenever the backup-now annotation
// gets a new value.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=mooring
// +kubebuilder:printcolumn:name="Database",type=string,JSONPath=`.spec.databaseRef.name`
// +kubebuilder:printcolumn:name="Schedule",type=string,JSONPath=`.spec.schedule`
// +kubebuilder:printcolumn:name="Last Success",type=date,JSONPath=`.status.lastSuccessfulTime`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Backup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec BackupSpec `json:"spec"`
	// +optional
	Status BackupStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// BackupList is a list of Backups.
type BackupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Backup `json:"items"`
}

func init() {
	knownTypes = append(knownTypes, &Backup{}, &BackupList{})
}
