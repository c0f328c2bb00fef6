package v1

// The app.kubernetes.io/component of each kind's children (ComponentLabel): with
// InstanceLabel, how kubectl mooring tree finds what Mooring made for an object, and why
// an App and a CacheInstance of the same name do not select each other's pods.
// (A DatabaseCluster's are in api/v1beta1.)
const (
	AppComponent           = "app"
	CacheInstanceComponent = "cache"
	BackupComponent        = "backup"
)
