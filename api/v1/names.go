package v1

// Name limits. Every object's name becomes the name of children and the value of the
// app.kubernetes.io/name and instance labels (at most 63 characters), so a name the
// children cannot carry is rejected when the object is created, by each kind's validating
// webhook as an error on metadata.name (name is immutable, so creation only; a CEL rule
// on the CRD root would be reported with no field, as "<nil>"). The limits are
// proven by internal/controller/limits_test.go, which builds every child of a name at the
// limit and validates it as the API server would.
const (
	// MaxAppNameLength: the App's name is its Service's name, a DNS-1035 label.
	MaxAppNameLength = 63
	// MaxCacheInstanceNameLength: the CacheInstance's name is its headless Service's
	// name, a DNS-1035 label.
	MaxCacheInstanceNameLength = 63
	// MaxBackupNameLength: the Backup's name is its CronJob's name, and the CronJob
	// controller names each Job "<name>-<minutes since epoch>", which must stay a valid
	// label value (63) with up to 11 characters appended.
	MaxBackupNameLength = 52
)
