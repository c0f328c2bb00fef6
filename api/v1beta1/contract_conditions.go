package v1beta1

// Condition types and reasons of a DatabaseCluster beyond those every kind has (Ready,
// Progressing, Paused, Contested and the engine's reasons, in api/v1). Declared here,
// once, for the operator that sets them and the programs and tests that read them.

// Condition types.
const (
	// ConditionSecretReady is True when the credentials Secret exists (and, when the user
	// names it, has both credential keys) and so does the superuser Secret.
	ConditionSecretReady = "SecretReady"
	// ConditionCredentialsSynced is True when the database has the credentials of the
	// credentials Secret, those status.credentials.revision stands for.
	ConditionCredentialsSynced = "CredentialsSynced"
	// ConditionStorageResized is True when every data volume has the requested size.
	ConditionStorageResized = "StorageResized"
	// ConditionReplicationHealthy is True when every replica streams from the primary
	// and is no further behind than the operator's lag limits.
	ConditionReplicationHealthy = "ReplicationHealthy"
	// ConditionInstancesHealthy is False while an instance manager keeps its server down
	// for a cause it names (an image without the server, a data directory of another
	// major version, a full volume).
	ConditionInstancesHealthy = "InstancesHealthy"
	// ConditionFinalSnapshot reports the final snapshot while the cluster is being deleted.
	ConditionFinalSnapshot = "FinalSnapshot"
	// ConditionMigrationNeeded is True on a cluster made by a release that ran the
	// Bitnami images: Mooring keeps its StatefulSet as it is and says how to move.
	ConditionMigrationNeeded = "MigrationNeeded"
	// ConditionRestored is set on a cluster with spec.bootstrap: False while its Backup's
	// dump is being loaded or could not be, True once it is (status.restoredFrom).
	ConditionRestored = "Restored"
)

// Reasons of Ready, Progressing, SecretReady, CredentialsSynced and StorageResized, and
// event reasons.
const (
	ReasonSecretFound       = "SecretFound"
	ReasonSecretGenerated   = "SecretGenerated"
	ReasonSecretNotFound    = "SecretNotFound"
	ReasonSecretKeysMissing = "SecretKeysMissing"
	// ReasonAdminSecretNotFound: the superuser Secret is gone from a cluster with data.
	ReasonAdminSecretNotFound = "AdminSecretNotFound"
	// ReasonAdminSecretConflict: a Secret Mooring did not make has the superuser Secret's name.
	ReasonAdminSecretConflict = "AdminSecretConflict"
	// ReasonCredentialsInSync and the reasons below are those of CredentialsSynced.
	ReasonCredentialsInSync = "InSync"
	// ReasonCredentialsSyncing: a Job is giving the database the Secret's credentials.
	ReasonCredentialsSyncing = "Syncing"
	// ReasonWaitingForPrimary: the credentials changed while no database pod is ready.
	ReasonWaitingForPrimary = "WaitingForPrimary"
	// ReasonCredentialsSyncFailed: the Job failed; the database keeps its credentials.
	ReasonCredentialsSyncFailed = "SyncFailed"
	// ReasonAdminPasswordChanged: the superuser Secret no longer holds the password the
	// database was set up with, so Mooring cannot (and does not try to) log in.
	ReasonAdminPasswordChanged = "AdminPasswordChanged"
	// ReasonSuperuserCredentials: the credentials Secret names the superuser.
	ReasonSuperuserCredentials = "SuperuserCredentials"
	ReasonAllReplicasReady     = "AllReplicasReady"
	ReasonReplicasNotReady     = "ReplicasNotReady"
	ReasonRollingOut           = "RollingOut"
	ReasonRolloutComplete      = "RolloutComplete"
	ReasonResizing             = "Resizing"
	ReasonExpanding            = "WaitingForVolumeExpansion"
	ReasonResized              = "Resized"
	// ReasonResizeForbidden: the API server refused to expand a data PVC, typically
	// because its StorageClass does not allow volume expansion.
	ReasonResizeForbidden = "ResizeForbidden"
	// ReasonVolumesKept is the Warning event of a cluster with deletionPolicy Delete whose
	// StatefulSet still kept its volumes when it was deleted: they stay, to be deleted by
	// hand.
	ReasonVolumesKept = "VolumesKept"
)

// Reasons of ReplicationHealthy and InstancesHealthy (whose False reasons are the
// instance manager's faults).
const (
	ReasonReplicasStreaming   = "ReplicasStreaming"
	ReasonNoReplicas          = "NoReplicas"
	ReasonReplicaNotStreaming = "ReplicaNotStreaming"
	ReasonReplicaLagging      = "ReplicaLagging"
	ReasonReplicaUnknown      = "ReplicaUnknown"
	ReasonInstancesRunning    = "InstancesRunning"
)

// Reasons of FinalSnapshot.
const (
	// ReasonSnapshotInProgress says the snapshot Job is running.
	ReasonSnapshotInProgress = "SnapshotInProgress"
	// ReasonSnapshotFailed says the snapshot Job failed.
	ReasonSnapshotFailed = "SnapshotFailed"
	// ReasonSnapshotTaken says the snapshot Job succeeded.
	ReasonSnapshotTaken = "SnapshotTaken"
	// ReasonSnapshotSkipped says the skip-final-snapshot annotation gave the snapshot up.
	ReasonSnapshotSkipped = "SnapshotSkipped"
	// ReasonNothingToSnapshot says the primary's data PVC does not exist: the cluster went
	// without a snapshot, as it has no data.
	ReasonNothingToSnapshot = "NothingToSnapshot"
)

// ReasonBitnamiLayout (MigrationNeeded) says the cluster's data is in the Bitnami images'
// layout.
const ReasonBitnamiLayout = "BitnamiLayout"

// Reasons of Restored.
const (
	ReasonWaitingToRestore = "WaitingForPrimary"
	ReasonRestoring        = "Restoring"
	ReasonRestoreFailed    = "RestoreFailed"
	ReasonBackupNotFound   = "BackupNotFound"
	ReasonRestoreSucceeded = "RestoreSucceeded"
)
