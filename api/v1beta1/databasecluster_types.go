package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DatabaseEngine is the database server a DatabaseCluster runs.
// +kubebuilder:validation:Enum=postgresql;mysql;mariadb
type DatabaseEngine string

// The supported engines.
const (
	PostgreSQL DatabaseEngine = "postgresql"
	MySQL      DatabaseEngine = "mysql"
	MariaDB    DatabaseEngine = "mariadb"
)

// DeletionPolicy says what happens to a DatabaseCluster's data when it is deleted.
// +kubebuilder:validation:Enum=Retain;Delete;Snapshot
type DeletionPolicy string

// The deletion policies.
const (
	// DeletionRetain keeps the data volumes (PVCs) after the cluster is deleted.
	DeletionRetain DeletionPolicy = "Retain"
	// DeletionDelete deletes the data volumes with the cluster.
	DeletionDelete DeletionPolicy = "Delete"
	// DeletionSnapshot takes a final dump before the cluster goes, then keeps the volumes.
	DeletionSnapshot DeletionPolicy = "Snapshot"
)

// StorageSpec describes each database pod's data volume.
type StorageSpec struct {
	// Size of each pod's data volume. It may grow (the PVCs are expanded), never shrink.
	// +kubebuilder:default="1Gi"
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).isGreaterThan(quantity('0'))",message="must be greater than zero"
	// +optional
	Size *resource.Quantity `json:"size,omitempty"`

	// StorageClassName of the data volumes; the cluster's default class when unset.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	StorageClassName *string `json:"storageClassName,omitempty"`
}

// BootstrapSpec says how a new cluster gets its first data. Without it the cluster starts
// empty.
type BootstrapSpec struct {
	// Backup restores a dump of a Backup (same namespace) into the new cluster.
	// +required
	Backup *BootstrapBackup `json:"backup"`
}

// BootstrapBackup names the Backup, and one of its dumps, a new cluster is restored from.
// The Backup must be of a database of the same engine.
type BootstrapBackup struct {
	// Name of the Backup, in the cluster's namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +required
	Name string `json:"name"`

	// Dump is the file name of one dump in the Backup's volume, in its spec.backupPath:
	// "<backup name>-<timestamp>.sql.gz" (a file name, no directory). The newest
	// successful dump when empty.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][A-Za-z0-9._-]*$`
	// +optional
	Dump string `json:"dump,omitempty"`
}

// DatabaseClusterSpec is a PostgreSQL, MySQL or MariaDB cluster: one primary and its
// replicas.
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.storage) || !has(oldSelf.storage.size) || (has(self.storage) && has(self.storage.size) && quantity(string(self.storage.size)).compareTo(quantity(string(oldSelf.storage.size))) >= 0)",message="storage.size may grow but never shrink",fieldPath=".storage.size"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.secretName) || (has(self.secretName) && self.secretName == oldSelf.secretName)",message="secretName is immutable once set",fieldPath=".secretName"
// +kubebuilder:validation:XValidation:rule="has(self.bootstrap) == has(oldSelf.bootstrap)",message="bootstrap is immutable: it can be set only when the cluster is created",fieldPath=".bootstrap"
type DatabaseClusterSpec struct {
	// Engine is "postgresql", "mysql" or "mariadb". It cannot change after creation.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="engine is immutable"
	// +required
	Engine DatabaseEngine `json:"engine"`

	// ReplicaCount is the number of database pods: pod 0 is the primary, the others
	// replicate from it.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=5
	// +kubebuilder:default=1
	// +optional
	ReplicaCount int32 `json:"replicaCount,omitempty"`

	// Version is the engine's major version ("18" for PostgreSQL, "8.4" for MySQL, "11.8"
	// for MariaDB). When unset, a current version for the engine is filled in.
	// +kubebuilder:validation:MaxLength=16
	// +optional
	Version string `json:"version,omitempty"`

	// Storage of each pod's data volume.
	// +kubebuilder:default={}
	// +optional
	Storage StorageSpec `json:"storage,omitempty"`

	// SecretName names the Secret with the credentials (keys "username" and "password").
	// Defaults to "<name>-credentials", which Mooring generates with a random password
	// when it is missing. A Secret named here explicitly must be provided by you.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	SecretName string `json:"secretName,omitempty"`

	// DeletionPolicy says what happens to the data when the cluster is deleted: Retain
	// (keep the volumes), Delete (delete them) or Snapshot (take a final dump first).
	// +kubebuilder:default=Retain
	// +optional
	DeletionPolicy DeletionPolicy `json:"deletionPolicy,omitempty"`

	// Resources of each database container. When unset, Mooring's defaults: requests
	// cpu 100m and memory 256Mi, a memory limit of 512Mi, no CPU limit. The servers'
	// memory settings (PostgreSQL's shared_buffers, InnoDB's buffer pool) follow the
	// memory limit. A request above its limit is refused.
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`

	// Bootstrap says where a new cluster's first data comes from: a dump of a Backup.
	// Without it the cluster starts empty. It can be set only when the cluster is
	// created, and cannot change afterwards.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="bootstrap is immutable: it can be set only when the cluster is created"
	// +optional
	Bootstrap *BootstrapSpec `json:"bootstrap,omitempty"`

	// TLS names a server certificate of your own; without it Mooring makes one, signed
	// by a CA of the cluster's (docs/databases.md, "TLS").
	// +optional
	TLS *DatabaseTLSSpec `json:"tls,omitempty"`

	// SuperuserAccess lets the superuser (postgres, root) log in over the network with
	// its password, over TLS. Off by default: the superuser then logs in only over the
	// instance's local socket, or with a client certificate of the cluster's CA that
	// only Mooring's Jobs hold.
	// +optional
	SuperuserAccess bool `json:"superuserAccess,omitempty"`
}

// DatabaseClusterPhase summarises a DatabaseCluster's state in one word.
// +kubebuilder:validation:Enum=Pending;Running;NotReady;Error;Deleting
type DatabaseClusterPhase string

// The phases of a DatabaseCluster.
const (
	DatabasePending  DatabaseClusterPhase = "Pending"
	DatabaseRunning  DatabaseClusterPhase = "Running"
	DatabaseNotReady DatabaseClusterPhase = "NotReady"
	DatabaseError    DatabaseClusterPhase = "Error"
	DatabaseDeleting DatabaseClusterPhase = "Deleting"
)

// DatabaseClusterStatus is what Mooring observed of the cluster.
type DatabaseClusterStatus struct {
	// Replicas is the number of database pods that exist.
	// +optional
	Replicas int32 `json:"replicas"`

	// ReadyReplicas is the number of database pods that are ready.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas"`

	// Selector is the label selector of the database pods, for the scale subresource.
	// +optional
	Selector string `json:"selector,omitempty"`

	// Phase is Pending, Running, NotReady, Error or Deleting.
	// +optional
	Phase DatabaseClusterPhase `json:"phase,omitempty"`

	// Binding makes the cluster a servicebinding.io provisioned service: a ConfigMap with
	// type, provider, host, port and database, and the credentials Secret (username,
	// password) that an App's spec.bindings projects.
	// +optional
	Binding *ServiceBindingStatus `json:"binding,omitempty"`

	// PrimaryEndpoint is host:port of the primary, e.g. "orders.shop.svc:5432".
	// +optional
	PrimaryEndpoint string `json:"primaryEndpoint,omitempty"`

	// StorageSize is the size the data volumes were last grown to.
	// +optional
	StorageSize *resource.Quantity `json:"storageSize,omitempty"`

	// Credentials says which credentials the database has: what bound Apps follow.
	// +optional
	Credentials *DatabaseCredentialsStatus `json:"credentials,omitempty"`

	// ObservedGeneration is the generation of the spec last reconciled successfully.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready, Progressing, SecretReady, CredentialsSynced, StorageResized,
	// Paused while paused, and Contested while another writer keeps changing a field of a
	// child.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Instances is what each database pod's instance manager reports, in pod order.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Instances []InstanceStatus `json:"instances,omitempty"`

	// RestoredFrom names the Backup dump the cluster's data came from (spec.bootstrap).
	// +optional
	RestoredFrom *RestoredFromStatus `json:"restoredFrom,omitempty"`

	// Initialized is set once the primary has first been ready: from then on the cluster
	// has data, and an instance that finds its volume empty copies the primary instead of
	// initialising an empty database (the primary itself waits). Mooring never unsets it.
	// +optional
	Initialized bool `json:"initialized,omitempty"`
}

// InstanceRole is the part a database pod plays in its cluster.
// +kubebuilder:validation:Enum=primary;replica
type InstanceRole string

// The instance roles.
const (
	// RolePrimary takes the writes.
	RolePrimary InstanceRole = "primary"
	// RoleReplica replicates from the primary.
	RoleReplica InstanceRole = "replica"
)

// InstanceStatus is what one database pod's instance manager reports.
type InstanceStatus struct {
	// Name of the pod.
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`

	// Role is primary or replica; unset while unknown.
	// +optional
	Role InstanceRole `json:"role,omitempty"`

	// Ready is whether the database server in the pod accepts connections (and, for a
	// replica, replicates).
	// +required
	Ready bool `json:"ready"`

	// LagBytes is how far the replica's replayed WAL is behind the primary (PostgreSQL);
	// unset when unknown, and for the primary.
	// +kubebuilder:validation:Minimum=0
	// +optional
	LagBytes *int64 `json:"lagBytes,omitempty"`

	// GTIDGap is how many transactions the replica has yet to apply (MariaDB and MySQL);
	// unset when unknown, and for the primary.
	// +kubebuilder:validation:Minimum=0
	// +optional
	GTIDGap *int64 `json:"gtidGap,omitempty"`

	// Position is the engine's own replication position: the LSN for PostgreSQL
	// ("0/3000148"), the GTID position for MariaDB and MySQL.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Position string `json:"position,omitempty"`

	// Message says what is wrong, when something is: the server cannot start,
	// replication broke.
	// +kubebuilder:validation:MaxLength=32768
	// +optional
	Message string `json:"message,omitempty"`
}

// RestoredFromStatus names the Backup dump a cluster's data was restored from.
type RestoredFromStatus struct {
	// Backup is the name of the Backup.
	// +required
	Backup string `json:"backup"`

	// Dump is the file name of the dump restored.
	// +required
	Dump string `json:"dump"`

	// Time is when the restore completed.
	// +optional
	Time *metav1.Time `json:"time,omitempty"`
}

// DatabaseCluster runs PostgreSQL, MySQL or MariaDB as a StatefulSet with a data volume per pod,
// a Service for the primary and a credentials Secret.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicaCount,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:resource:categories=mooring,shortName=dbc
// +kubebuilder:printcolumn:name="Engine",type=string,JSONPath=`.spec.engine`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.spec.version`
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.spec.replicaCount`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type DatabaseCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec DatabaseClusterSpec `json:"spec"`
	// +optional
	Status DatabaseClusterStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// DatabaseClusterList is a list of DatabaseClusters.
type DatabaseClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []DatabaseCluster `json:"items"`
}

func init() {
	knownTypes = append(knownTypes, &DatabaseCluster{}, &DatabaseClusterList{})
}

// ServiceBindingStatus names what an App's binding to the cluster projects.
type ServiceBindingStatus struct {
	// Name is the ConfigMap with the binding's non-secret entries.
	// +required
	Name string `json:"name"`

	// SecretName is the Secret with username and password.
	// +optional
	SecretName string `json:"secretName,omitempty"`
}

// DatabaseCredentialsStatus records which credentials the database has, as fingerprints:
// never the values.
type DatabaseCredentialsStatus struct {
	// Revision is 1 for the credentials the database was set up with and one more each
	// time Mooring has changed the database to the credentials Secret's username and
	// password. It advances only once the database has them, so an App bound to the
	// cluster rolls its pods onto new credentials when it changes, not when the Secret
	// does.
	// +kubebuilder:validation:Minimum=1
	Revision int64 `json:"revision"`

	// Hash is a keyed fingerprint (HMAC-SHA-256, keyed with the superuser password) of
	// the username and password the database has as of Revision.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Hash string `json:"hash,omitempty"`

	// AdminHash is a fingerprint (PBKDF2-SHA-256) of the superuser password the database
	// has, the one in the Secret <name>-admin. Remove it to make Mooring take the
	// Secret's current password as the database's, after changing it in both yourself.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	AdminHash string `json:"adminHash,omitempty"`
}
