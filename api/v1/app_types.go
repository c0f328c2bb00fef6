package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AppSpec is what a developer asks for: an image run with a number of replicas, optionally
// with a configuration, a port to expose, environment variables and resources.
// +kubebuilder:validation:XValidation:rule="!has(self.config) || !has(self.env) || self.env.all(e, e.name != 'APP_CONFIG')",message="APP_CONFIG is set from spec.config; remove it from spec.env",fieldPath=".env"
type AppSpec struct {
	// Image is the container image to run, for example "nginx:1.27" or
	// "registry.example.com/team/api@sha256:...".
	// +kubebuilder:validation:MinLength=1
	// +required
	Image string `json:"image"`

	// Replicas is the number of pods to run.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:default=1
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// Config is the application's configuration. Mooring stores it in the ConfigMap
	// "<name>-config" (key "config") and passes it to the container as APP_CONFIG; changing it
	// rolls the pods.
	// +optional
	Config string `json:"config,omitempty"`

	// Port is the container port the application listens on. When set, Mooring exposes it
	// through a ClusterIP Service named like the App.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +optional
	Port *int32 `json:"port,omitempty"`

	// Env lists extra environment variables for the container.
	// +listType=map
	// +listMapKey=name
	// +optional
	Env []corev1.EnvVar `json:"env,omitempty"`

	// Resources are the container's compute resource requests and limits.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`
}

// AppPhase summarises an App's state in one word.
// +kubebuilder:validation:Enum=Pending;Running;NotReady;Error
type AppPhase string

// The phases of an App.
const (
	// AppPending means the Deployment has not yet made any replica available.
	AppPending AppPhase = "Pending"
	// AppRunning means the rollout is complete and all requested replicas are available.
	AppRunning AppPhase = "Running"
	// AppNotReady means some replicas ran before but not all requested ones are available now.
	AppNotReady AppPhase = "NotReady"
	// AppError means Mooring could not reconcile the App; the Ready condition says why.
	AppError AppPhase = "Error"
)

// AppStatus is what Mooring observed of the App's children.
type AppStatus struct {
	// Replicas is the number of pods the Deployment currently has.
	// +optional
	Replicas int32 `json:"replicas"`

	// AvailableReplicas is the number of pods that are available.
	// +optional
	AvailableReplicas int32 `json:"availableReplicas"`

	// Selector is the label selector of the App's pods, for the scale subresource.
	// +optional
	Selector string `json:"selector,omitempty"`

	// Phase is Pending, Running, NotReady or Error.
	// +optional
	Phase AppPhase `json:"phase,omitempty"`

	// ObservedGeneration is the generation of the spec that was last reconciled successfully.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions are Ready, Progressing and, while the App is paused, Paused.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// App runs a container image as a Deployment, with an optional Service and ConfigMap.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:resource:categories=mooring
// +kubebuilder:printcolumn:name="Image",type=string,JSONPath=`.spec.image`
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="Available",type=integer,JSONPath=`.status.availableReplicas`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type App struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec AppSpec `json:"spec"`
	// +optional
	Status AppStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// AppList is a list of Apps.
type AppList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []App `json:"items"`
}

func init() {
	knownTypes = append(knownTypes, &App{}, &AppList{})
}
