package v1beta1

// Annotations and labels Mooring sets on a DatabaseCluster's children, declared once for
// the operator and the programs and tests that read them.
const (
	// CredentialsJobLabel marks the Jobs that change a cluster's credentials.
	CredentialsJobLabel = "mooring.dev/database-job"
	// CredentialsHashAnnotation on such a Job is the fingerprint of the credentials it
	// was made for (status.credentials.hash once it succeeds).
	CredentialsHashAnnotation = "mooring.dev/credentials-hash"
	// RoleLabel on a database pod is its role, "primary" or "replica": what the read-only
	// Service selects on (a Service cannot select "every pod but pod 0").
	RoleLabel = "mooring.dev/role"
)
