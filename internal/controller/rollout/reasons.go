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
	// ReasonReplicaFailure (Ready=False, Progressing=False): the Deployment reports
	// ReplicaFailure, its ReplicaSet cannot create pods (an exceeded ResourceQuota, pods
	// forbidden by admission); the message is the Deployment's.
	ReasonReplicaFailure = "ReplicaFailure"
	// ReasonPodsFailing (Ready=False): pods fail for a reason that is not a valid
	// condition reason itself; when it is (ImagePullBackOff, CrashLoopBackOff,
	// Unschedulable, ...), Ready carries the pods' own reason instead.
	ReasonPodsFailing = "PodsFailing"
	// ReasonHealthCheckNotPassed (Ready=False): a container runs but its startup probe
	// has not passed: it is still starting, or its health check fails.
	ReasonHealthCheckNotPassed = "HealthCheckNotPassed"
)
