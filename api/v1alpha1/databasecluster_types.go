package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DatabaseClusterSpec is the v1alpha1 spec: engine, replicas and version only.
type DatabaseClusterSpec struct {
	// Engine is "postgresql" or "mysql". It cannot change after creation.
	// +kubebuilder:validation:Enum=postgresql;mysql
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="engine is immutable"
	// +required
	Engine string `json:"engine"`

	// Replicas is the number of database pods (v1beta1: replicaCount).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=5
	// +kubebuilder:default=1
	// +optional
	Replicas int32 `json:"replicas,omitempty"`

	// Version is the engine's major version; defaulted by engine when unset.
	// +kubebuilder:validation:MaxLength=16
	// +optional
	Version string `json:"version,omitempty"`
}

// DatabaseClusterStatus is the v1alpha1 status.
type DatabaseClusterStatus struct {
	// Replicas is the number of database pods the StatefulSet has.
	// +optional
	Replicas int32 `json:"replicas"`
	// ReadyReplicas is how many of them are ready.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas"`
	// Selector is the label selector of the database pods, for the scale subresource.
	// +optional
	Selector string `json:"selector,omitempty"`
	// Phase is Pending, Running, NotReady, Error or Deleting.
	// +optional
	Phase string `json:"phase,omitempty"`
	// PrimaryEndpoint is host:port of the primary, e.g. "orders.shop.svc:5432".
	// +optional
	PrimaryEndpoint string `json:"primaryEndpoint,omitempty"`

	// Binding makes the cluster a servicebinding.io provisioned service: a ConfigMap with
	// type, provider, host, port and database, and the credentials Secret (username,
	// password) that an App's spec.bindings projects.
	// +optional
	Binding *ServiceBindingStatus `json:"binding,omitempty"`
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// DatabaseCluster (v1alpha1) is served for older clients; prefer v1beta1.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:resource:categories=mooring,shortName=dbc
// +kubebuilder:printcolumn:name="Engine",type=string,JSONPath=`.spec.engine`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.spec.version`
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="oldSelf.hasValue() || self.metadata.name.size() <= 52",message="metadata.name must be no more than 52 characters: the StatefulSet labels its pods with controller-revision-hash <name>-<10-character hash>, at most 63 characters",optionalOldSelf=true
// +kubebuilder:validation:XValidation:rule="oldSelf.hasValue() || self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must be a DNS-1035 label (lower-case letters, digits and '-', starting with a letter): it names the DatabaseCluster's Service",optionalOldSelf=true
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
