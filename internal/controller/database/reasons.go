package database

// Condition types of a DatabaseCluster beyond the engine's Ready and Progressing.
const (
	// ConditionSecretReady is True when the credentials Secret exists (and, when the user
	// names it, has both credential keys) and so does the superuser Secret.
	ConditionSecretReady = "SecretReady"
	// ConditionCredentialsSynced is True when the database has the credentials of the
	// credentials Secret, those status.credentials.revision stands for.
	ConditionCredentialsSynced = "CredentialsSynced"
	// ConditionStorageResized is True when every data volume has the requested size.
	ConditionStorageResized = "StorageResized"
)

// Condition reasons and event reasons.
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
)
