package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CacheEngine names the cache server a CacheInstance runs.
// +kubebuilder:validation:Enum=memcached
type CacheEngine string

// The cache engines Mooring can run.
const (
	// CacheEngineMemcached runs memcached (https://memcached.org).
	CacheEngineMemcached CacheEngine = "memcached"
)

// Defaults of a CacheInstance's spec. The API server fills them in from the CRD schema
// (the +kubebuilder:default markers below, which must agree); Mooring's builders use
// these constants for fields that are still unset, e.g. in objects built in unit tests.
const (
	DefaultCacheVersion        = "1.6"
	DefaultCacheReplicas       = int32(1)
	DefaultCacheMemoryMB       = int32(64)
	DefaultCacheMaxConnections = int32(1024)
	DefaultCachePort           = int32(11211)
)

// CacheInstanceSpec is what a developer asks for: a memcached cache of a given size,
// with some replicas. Clients find the replicas through a headless Service and hash keys
// across them; memcached replicas do not share data.
type CacheInstanceSpec struct {
	// Engine is the cache server to run. Only "memcached" is supported.
	// +kubebuilder:default=memcached
	// +optional
	Engine CacheEngine `json:"engine,omitempty"`

	// Version is the engine version: the tag of the official image, "memcached:<version>".
	// Ignored when image is set.
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`
	// +kubebuilder:default="1.6"
	// +optional
	Version string `json:"version,omitempty"`

	// Image overrides the container image, for a mirror or a pinned digest, for example
	// "registry.example.com/mirror/memcached:1.6.38". The image must accept memcached's
	// command-line flags (-m, -c, -p) as its arguments and run as user 11211, as the
	// official image does.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:Pattern=`^\S+$`
	// +optional
	Image string `json:"image,omitempty"`

	// Replicas is the number of memcached pods. Each holds its own share of the keys.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	// +kubebuilder:default=1
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// MemoryMB is the memory for items in each replica, in megabytes (memcached's -m).
	// The container's memory request and limit are this plus a headroom for memcached's
	// own use (connections, hash table): 10% of it, at least 32 MiB, plus 16 KiB for each
	// of maxConnections.
	// +kubebuilder:validation:Minimum=64
	// +kubebuilder:validation:Maximum=65536
	// +kubebuilder:default=64
	// +optional
	MemoryMB *int32 `json:"memoryMB,omitempty"`

	// MaxConnections is the maximum number of simultaneous client connections per replica
	// (memcached's -c).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65536
	// +kubebuilder:default=1024
	// +optional
	MaxConnections *int32 `json:"maxConnections,omitempty"`

	// Port is the TCP port memcached listens on (memcached's -p) and the Service exposes.
	// memcached runs as a non-root user without capabilities, so ports below 1024 are not
	// allowed.
	// +kubebuilder:validation:Minimum=1024
	// +kubebuilder:validation:Maximum=65535
	// +kubebuilder:default=11211
	// +optional
	Port *int32 `json:"port,omitempty"`
}

// CacheInstancePhase summarises a CacheInstance's state in one word.
// +kubebuilder:validation:Enum=Pending;Running;NotReady;Error
type CacheInstancePhase string

// The phases of a CacheInstance.
const (
	// CacheInstancePending means the Deployment has not yet made any replica available.
	CacheInstancePending CacheInstancePhase = "Pending"
	// CacheInstanceRunning means the rollout is complete and all requested replicas are
	// available.
	CacheInstanceRunning CacheInstancePhase = "Running"
	// CacheInstanceNotReady means some, but not all, requested replicas are available, or
	// a rollout is under way.
	CacheInstanceNotReady CacheInstancePhase = "NotReady"
	// CacheInstanceError means Mooring could not reconcile the CacheInstance; the Ready
	// condition says why.
	CacheInstanceError CacheInstancePhase = "Error"
)

// CacheInstanceStatus is what Mooring observed of the CacheInstance's children.
type CacheInstanceStatus struct {
	// Replicas is the number of memcached pods the Deployment currently has.
	// +optional
	Replicas int32 `json:"replicas"`

	// AvailableReplicas is the number of memcached pods that are available.
	// +optional
	AvailableReplicas int32 `json:"availableReplicas"`

	// Selector is the label selector of the CacheInstance's pods, for the scale subresource.
	// +optional
	Selector string `json:"selector,omitempty"`

	// Phase is Pending, Running, NotReady or Error.
	// +optional
	Phase CacheInstancePhase `json:"phase,omitempty"`

	// Endpoint is the address clients connect to, "<name>.<namespace>.svc:<port>". Its
	// Service is headless: the name resolves to the IP of every ready replica, and clients
	// hash keys across them.
	// +optional
	Endpoint string `json:"endpoint,omitempty"`

	// Binding makes the CacheInstance a servicebinding.io provisioned service: the
	// ConfigMap an App's spec.bindings projects (type memcached, provider, host, port).
	// +optional
	Binding *ServiceBindingStatus `json:"binding,omitempty"`

	// ObservedGeneration is the generation of the spec that was last reconciled successfully.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions are Ready, Progressing, Paused while the CacheInstance is paused, and
	// Contested while another writer keeps changing a field of a child.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// CacheInstance runs a memcached cache as a Deployment behind a headless Service, with a
// PodDisruptionBudget when it has more than one replica.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:resource:categories=mooring
// +kubebuilder:printcolumn:name="Engine",type=string,JSONPath=`.spec.engine`
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="Memory",type=integer,JSONPath=`.spec.memoryMB`,description="Memory for items per replica, in MB"
// +kubebuilder:printcolumn:name="Available",type=integer,JSONPath=`.status.availableReplicas`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Endpoint",type=string,JSONPath=`.status.endpoint`,priority=1
type CacheInstance struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the cache asked for: engine and version, replicas, memory, connections and
	// port. Every field has a default, so it may be left out.
	// +kubebuilder:default={}
	// +optional
	Spec CacheInstanceSpec `json:"spec"`
	// +optional
	Status CacheInstanceStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// CacheInstanceList is a list of CacheInstances.
type CacheInstanceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CacheInstance `json:"items"`
}

func init() {
	knownTypes = append(knownTypes, &CacheInstance{}, &CacheInstanceList{})
}
