package v1beta1

// MaxNameLength is the longest DatabaseCluster name whose children are all valid: the
// StatefulSet controller labels every pod with controller-revision-hash
// "<name>-<hash of up to 10 characters>", a label value of at most 63 characters. The
// name is also the primary Service's name and "<name>-headless" the headless Service's,
// both DNS-1035 labels. internal/controller/limits_test.go proves the limit.
const MaxNameLength = 52

// The names of a DatabaseCluster's children and annotations that other programs (the
// webhook, the kubectl plugin, a user's scripts) rely on: the API's contract, declared
// here so that the DatabaseCluster controller and the webhook share one copy.
const (
	// DatabaseComponent is the app.kubernetes.io/component label of a DatabaseCluster's
	// children, its superuser Secret and data volumes among them.
	DatabaseComponent = "database"
	// AdminSecretSuffix ends the name of a cluster's superuser Secret.
	AdminSecretSuffix = "-admin"
	// CredentialsSecretSuffix ends the name of the credentials Secret Mooring generates
	// when spec.secretName is not set.
	CredentialsSecretSuffix = "-credentials"
	// SkipFinalSnapshotAnnotation set to "true" lets a cluster whose final snapshot cannot
	// be taken (or that deletionPolicy Snapshot would hold) be deleted without one.
	SkipFinalSnapshotAnnotation = "mooring.dev/skip-final-snapshot"
)

// AdminSecretName is the Secret with a cluster's superuser password, Mooring's own (the
// DatabaseCluster controller creates it; spec.secretName may not name it).
func AdminSecretName(clusterName string) string { return clusterName + AdminSecretSuffix }

// CredentialsSecretName is the Secret Mooring generates for a cluster unless spec.secretName
// names another.
func CredentialsSecretName(clusterName string) string { return clusterName + CredentialsSecretSuffix }
