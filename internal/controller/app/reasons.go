package app

// Reasons of the App's Ready and Progressing conditions.
const (
	ReasonAllReplicasAvailable   = "AllReplicasAvailable"
	ReasonReplicasUnavailable    = "ReplicasUnavailable"
	ReasonDeploymentPending      = "DeploymentNotObserved"
	ReasonRollingOut             = "RollingOut"
	ReasonRolloutComplete        = "RolloutComplete"
	ReasonProgressDeadlineExceed = "ProgressDeadlineExceeded"
)
