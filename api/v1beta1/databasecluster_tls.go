package v1beta1

// DatabaseTLSSpec is a server certificate the user brings.
type DatabaseTLSSpec struct {
	// ServerCertSecretName names a Secret in the cluster's namespace with tls.crt,
	// tls.key and ca.crt (a cert-manager Certificate's Secret has them). The certificate
	// must name the cluster's Services and pods (docs/databases.md, "TLS"); bound Apps
	// verify the server with its ca.crt. Mooring reloads the server when the Secret
	// changes.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +required
	ServerCertSecretName string `json:"serverCertSecretName"`
}

// Suffixes of the Secrets Mooring keeps for a cluster's TLS and replication.
const (
	// CASecretSuffix: the cluster's CA (ca.crt, ca.key), made once, never replaced.
	CASecretSuffix = "-ca"
	// TLSSecretSuffix: the server certificate Mooring issues (tls.crt, tls.key, ca.crt).
	TLSSecretSuffix = "-tls"
	// SuperuserClientSecretSuffix: the superuser's client certificate, for Mooring's Jobs.
	SuperuserClientSecretSuffix = "-superuser-client"
	// ReplicationSecretSuffix: the replication user's password.
	ReplicationSecretSuffix = "-replication"
)

// Reasons of SecretReady about the cluster's TLS Secrets.
const (
	// ReasonTLSSecretNotFound: the Secret spec.tls names does not exist.
	ReasonTLSSecretNotFound = "TLSSecretNotFound"
	// ReasonTLSSecretConflict: a Secret of a name Mooring keeps for the cluster's TLS or
	// replication exists but is not Mooring's.
	ReasonTLSSecretConflict = "TLSSecretConflict"
)
