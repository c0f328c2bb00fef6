package v1

// Condition types and reasons of App, CacheInstance and Backup, as status.conditions and
// events show them. They are declared here, once, for the operator that sets them and
// for kubectl mooring, the portal, the metrics and the tests that read them.
// (DatabaseCluster's own are in api/v1beta1; it shares the ones below every kind has.)

// Condition types every kind has.
const (
	// ConditionReady is True when the object does what its spec asks.
	ConditionReady = "Ready"
	// ConditionProgressing is True while the object's children move towards the spec.
	ConditionProgressing = "Progressing"
	// ConditionPaused is True while PausedAnnotation stops reconciliation.
	ConditionPaused = "Paused"
	// ConditionContested is True while another writer keeps changing a field of a child
	// that Mooring sets; its message names the field, the other field manager and how
	// often it changed it.
	ConditionContested = "Contested"
)

// Reasons the operator's engine sets on any kind.
const (
	// ReasonInvalidSpec: validation rejected the spec.
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonReconcileError: syncing failed; the message has the error, the engine retries.
	ReasonReconcileError = "ReconcileError"
	// ReasonPaused: the object carries PausedAnnotation.
	ReasonPaused = "PausedByAnnotation"
	// ReasonDeleting: the object is being deleted and its finalizer has work left.
	ReasonDeleting = "Deleting"
	// ReasonOtherWriter: another field manager changes a child's field Mooring sets.
	ReasonOtherWriter = "OtherWriter"
)

// Reasons of the Ready and Progressing conditions of a kind that runs as a Deployment
// (App, CacheInstance).
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

// Condition types of an App beyond Ready and Progressing; each is present only while the
// field it reports on is set.
const (
	// ConditionExposed is True when the Ingress of spec.expose exists, or when the Gateway's
	// controller accepted its HTTPRoute (Unknown until it reports, False with its reason
	// when it refuses it).
	ConditionExposed = "Exposed"
	// ConditionEnvFromReady is True when every ConfigMap and Secret of spec.envFrom exists.
	ConditionEnvFromReady = "EnvFromReady"
	// ConditionBindingsReady is True when every service of spec.bindings is Running. False
	// holds the App back only until each binding first resolved (reason BindingNotFound or
	// BindingNotRunning); after that it informs (BindingDegraded) and the App still rolls out.
	ConditionBindingsReady = "BindingsReady"
	// ConditionAutoscaling is the HorizontalPodAutoscaler's ability to scale: False with
	// its reason when its AbleToScale or ScalingActive condition is False (most often
	// FailedGetResourceMetric: the pods request no CPU or memory for a utilization target),
	// Unknown until it reports. The pods may all run meanwhile, so Ready does not say it.
	ConditionAutoscaling = "Autoscaling"
	// ConditionBindingEnvShadowed is True (reason SpecEnvWins) while spec.env sets a
	// variable an env binding sets too: the pods get spec.env's value and not the
	// binding's. The webhook refuses that on new Apps; this reports the ones admitted
	// before it did. Absent otherwise.
	ConditionBindingEnvShadowed = "BindingEnvShadowed"
)

// Condition and event reasons of an App.
const (
	ReasonIngressApplied = "IngressApplied"
	// ReasonHTTPRouteApplied is Exposed=Unknown: the HTTPRoute is applied, the Gateway's
	// controller has not reported on it yet.
	ReasonHTTPRouteApplied  = "HTTPRouteApplied"
	ReasonHTTPRouteAccepted = "HTTPRouteAccepted"
	// ReasonHTTPRouteNotAccepted stands in for a Gateway controller's reason that is not
	// a valid condition reason.
	ReasonHTTPRouteNotAccepted   = "HTTPRouteNotAccepted"
	ReasonGatewayAPINotInstalled = "GatewayAPINotInstalled"
	ReasonEnvFromFound           = "AllFound"
	ReasonEnvFromMissing         = "EnvFromNotFound"
	ReasonBindingsReady          = "AllRunning"
	ReasonBindingNotFound        = "BindingNotFound"
	ReasonBindingNotRunning      = "BindingNotRunning"
	ReasonBindingDegraded        = "BindingDegraded"
	ReasonSpecEnvWins            = "SpecEnvWins"
	ReasonWaiting                = "WaitingForReferences"
	ReasonAutoscalerPending      = "AutoscalerPending"
	ReasonAutoscalerActive       = "ScalingActive"
	// ReasonAutoscalerCannotScale stands in for an HPA reason that is not a valid
	// condition reason.
	ReasonAutoscalerCannotScale = "AutoscalerCannotScale"
)

// Condition types of a Backup beyond Ready.
const (
	// ConditionLastBackupSucceeded is True when the most recent finished backup succeeded.
	ConditionLastBackupSucceeded = "LastBackupSucceeded"
	// ConditionBackupNowWaiting is True, and exists only, while the backup the
	// backup-now annotation asks for waits for another dump Job of the Backup to finish:
	// one dump at a time per Backup.
	ConditionBackupNowWaiting = "BackupNowWaiting"
)

// Condition and event reasons of a Backup.
const (
	ReasonDatabaseNotFound   = "DatabaseNotFound"
	ReasonDatabaseNotRunning = "DatabaseNotRunning"
	ReasonClaimNotFound      = "ClaimNotFound"
	ReasonScheduled          = "Scheduled"
	ReasonSuspended          = "Suspended"
	ReasonBackupSucceeded    = "BackupSucceeded"
	ReasonBackupFailed       = "BackupFailed"
	ReasonNoBackupYet        = "NoBackupYet"
	ReasonCleaningUp         = "CleaningUp"
	ReasonCleanupFailed      = "CleanupFailed"
	ReasonCleanedUp          = "CleanedUp"
	ReasonNothingToClean     = "NothingToClean"
	ReasonDumpsRetained      = "DumpsRetained"
	ReasonCronJobSuspended   = "CronJobSuspended"
	ReasonInvalidSchedule    = "InvalidSchedule"
	// ReasonBackupInProgress: another dump Job of the Backup runs (BackupNowWaiting, and
	// a Normal event when the wait begins).
	ReasonBackupInProgress = "BackupInProgress"
	// ReasonStorageKept is the Warning event of a Backup deleted with cleanupPolicy Delete
	// whose volume was kept because it holds files that are not the Backup's dumps.
	ReasonStorageKept = "StorageKept"
)
