package backup

// Condition types of a Backup beyond the engine's Ready.
const (
	// ConditionLastBackupSucceeded is True when the most recent finished backup succeeded.
	ConditionLastBackupSucceeded = "LastBackupSucceeded"
)

// Condition reasons and event reasons.
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
)
