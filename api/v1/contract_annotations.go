package v1

// The annotations and labels Mooring reads and writes on its objects and their children:
// the operator sets or honours them, kubectl mooring, the portal and the metrics read
// them. They are declared here, once, so every program agrees on them without importing
// the operator. (DatabaseCluster's own are in api/v1beta1.)

// Annotations a user sets on any Mooring object.
const (
	// PausedAnnotation set to "true" stops all changes to the object's children; the
	// Paused condition confirms it (kubectl mooring pause, the portal's Pause button).
	PausedAnnotation = "mooring.dev/paused"
	// ReconcileRequestedAnnotation asks for a reconcile now (kubectl mooring reconcile sets
	// it to the time of the request). Nothing reads its value: like the pause switch, a
	// changed annotation passes the controllers' predicate, and that is the whole mechanism.
	ReconcileRequestedAnnotation = "mooring.dev/reconcile-requested-at"
	// BackupNowAnnotation on a Backup starts one on-demand backup per distinct value: set
	// it to anything new (a timestamp, say) to take a backup now.
	BackupNowAnnotation = "mooring.dev/backup-now"
)

// Annotations Mooring sets on the children it makes.
const (
	// SpecHashAnnotation on a child holds a hash of what Mooring last applied to it, so a
	// spec change (including a removed field) is noticed without a server round trip.
	SpecHashAnnotation = "mooring.dev/spec-hash"
	// FieldOwnershipAnnotation marks a child Mooring created with a plain create, whose
	// fields are therefore recorded under an Update entry of managedFields; the next apply
	// converts that entry into Mooring's Apply entry and removes the annotation.
	FieldOwnershipAnnotation = "mooring.dev/field-ownership"
	// ConfigChecksumAnnotation on an App's pod template changes with spec.config, which
	// rolls the pods: an environment variable taken from a ConfigMap is read only at start.
	ConfigChecksumAnnotation = "mooring.dev/config-checksum"
	// EnvFromChecksumAnnotation on an App's pod template changes with every write of a
	// required ConfigMap or Secret of spec.envFrom (a hash of their resourceVersions:
	// Mooring never reads their data), which rolls the pods for the same reason.
	EnvFromChecksumAnnotation = "mooring.dev/envfrom-checksum"
	// BindingsChecksumAnnotation on an App's pod template changes when the values behind a
	// binding's environment variables change (a rotated password), which rolls the pods:
	// files follow changes by themselves, variables are read only at start.
	BindingsChecksumAnnotation = "mooring.dev/bindings-checksum"
	// BackupNowValueAnnotation on a Backup's manual Job records the BackupNowAnnotation
	// value it was made for.
	BackupNowValueAnnotation = "mooring.dev/backup-now-value"
	// StorageKeptAnnotation on a Backup's volume says why Mooring did not delete it with
	// the Backup: what was left in it that was not the Backup's.
	StorageKeptAnnotation = "mooring.dev/kept"
	// FinalizingUIDAnnotation on a Job that a finalizer creates (the final snapshot, a
	// Backup's cleanup) holds the UID of the object being finalized. Such a Job has no
	// owner reference to that object, which is being deleted: under foreground deletion
	// the garbage collector would delete a dependent as soon as it is created, and
	// the finalizer would create it again for ever. The UID tells the Job from one left by an
	// earlier object of the same name, whose outcome says nothing about this one.
	FinalizingUIDAnnotation = "mooring.dev/finalizing-uid"
)

// Labels every child carries. The operator's cache selects on ManagedByLabel, so a child
// without it is invisible to Mooring; kubectl mooring tree finds an object's children by
// InstanceLabel and ComponentLabel.
const (
	NameLabel      = "app.kubernetes.io/name"
	InstanceLabel  = "app.kubernetes.io/instance"
	ComponentLabel = "app.kubernetes.io/component"
	ManagedByLabel = "app.kubernetes.io/managed-by"
	// ManagedBy is ManagedByLabel's value.
	ManagedBy = "mooring"
)

// BackupJobTypeLabel tells a Backup's Jobs apart: scheduled, manual or cleanup. The
// CronJob's job template carries it, so the Jobs the CronJob creates have it too.
const BackupJobTypeLabel = "mooring.dev/backup-job"
