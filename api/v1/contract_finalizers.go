package v1

// FinalizerPrefix starts the name of every finalizer Mooring sets, so the operator can
// remove the ones a changed spec no longer needs and leave other controllers' alone.
const FinalizerPrefix = "mooring.dev/"

// BackupCleanupFinalizer keeps a Backup with cleanupPolicy Delete until its dumps are
// removed.
const BackupCleanupFinalizer = FinalizerPrefix + "cleanup"
