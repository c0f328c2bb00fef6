package rollout

// Reasons of the Ready and Progressing conditions of a kind that runs as a Deployment.
const (
	// ReasonAllReplicasAvailable (Ready=True): every requested replica is available.
	ReasonAllReplicasAvailable = "AllReplicasAvailable"
	// ReasonReplicasUnavailable (Ready=False): fewer replicas are available than requested.
	ReasonReplicasUnavailable = "ReplicasUnavailable"
	// ReasonDeploymentPending (Progressing=True): the Deployment controller has not yet
	// observed the latest Deployment spec.
	ReasonDeploymentPending = "DeploymentNotObserved"
	// ReasonRollingOut (Progressing=True): pods are being created or replaced.
	ReasonRollingOut = "RollingOut"
	// ReasonRolloutComplete (Progressing=False): every replica is updated and available.
	ReasonRolloutComplete = "RolloutComplete"
	// ReasonProgressDeadlineExceed (Progressing=False): the rollout is stuck.
	ReasonProgressDeadlineExceed = "ProgressDeadlineExceeded"
)
