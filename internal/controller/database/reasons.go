package database

// Condition types of a DatabaseCluster beyond the engine's Ready and Progressing.
const (
	// ConditionSecretReady is True when the credentials Secret exists (and, when the user
	// names it, has both credential keys).
	ConditionSecretReady = "SecretReady"
	// ConditionStorageResized is True when every data volume has the requested size.
	ConditionStorageResized = "StorageResized"
)

// Condition reasons and event reasons.
const (
	ReasonSecretFound       = "SecretFound"
	ReasonSecretGenerated   = "SecretGenerated"
	ReasonSecretNotFound    = "SecretNotFound"
	ReasonSecretKeysMissing = "SecretKeysMissing"
	ReasonAllReplicasReady  = "AllReplicasReady"
	ReasonReplicasNotReady  = "ReplicasNotReady"
	ReasonRollingOut        = "RollingOut"
	ReasonRolloutComplete   = "RolloutComplete"
	ReasonResizing          = "Resizing"
	ReasonExpanding         = "WaitingForVolumeExpansion"
	ReasonResized           = "Resized"
	// ReasonResizeForbidden: the API server refused to expand a data PVC, typically
	// because its StorageClass does not allow volume expansion.
	ReasonResizeForbidden = "ResizeForbidden"
)
