package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AppSpec is what a developer asks for: an image run with a number of replicas, optionally
// with a configuration, a port to expose, environment variables and resources.
// +kubebuilder:validation:XValidation:rule="!has(self.config) || !has(self.env) || self.env.all(e, e.name != 'APP_CONFIG')",message="APP_CONFIG is set from spec.config; remove it from spec.env",fieldPath=".env"
// +kubebuilder:validation:XValidation:rule="!has(self.expose) || has(self.port)",message="spec.expose needs spec.port: the Ingress or HTTPRoute routes to the App's Service on that port",fieldPath=".expose"
// +kubebuilder:validation:XValidation:rule="!has(self.healthCheck) || has(self.healthCheck.port) || has(self.port)",message="spec.healthCheck.port is required when spec.port is not set",fieldPath=".healthCheck.port"
// +kubebuilder:validation:XValidation:rule="!has(self.autoscaling) || !has(oldSelf.autoscaling) || self.replicas == oldSelf.replicas",message="spec.replicas cannot change while spec.autoscaling is set: the HorizontalPodAutoscaler owns the replica count (change spec.autoscaling, or remove it to scale by hand)",fieldPath=".replicas"
// +kubebuilder:validation:XValidation:rule="!has(self.bindings) || !has(self.env) || self.env.all(e, e.name != 'SERVICE_BINDING_ROOT')",message="SERVICE_BINDING_ROOT is set from spec.bindings; remove it from spec.env",fieldPath=".env"
type AppSpec struct {
	// Image is the container image to run, for example "nginxinc/nginx-unprivileged:1.26"
	// or "registry.example.com/team/api@sha256:...". It must run as a non-root user unless
	// securityContext allows root.
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

	// Command replaces the image's entrypoint.
	// +optional
	Command []string `json:"command,omitempty"`

	// Args replaces the image's default arguments.
	// +optional
	Args []string `json:"args,omitempty"`

	// EnvFrom sets environment variables from every key of ConfigMaps or Secrets in the
	// App's namespace. Until a referenced one (not marked optional) exists the App waits,
	// with EnvFromReady=False naming it. A change to one not marked optional rolls the pods.
	// +kubebuilder:validation:XValidation:rule="self.all(e, has(e.configMapRef) != has(e.secretRef))",message="each spec.envFrom entry needs exactly one of configMapRef and secretRef"
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	EnvFrom []corev1.EnvFromSource `json:"envFrom,omitempty"`

	// SecurityContext is the pod's security context. Unset, pods run with the RuntimeDefault
	// seccomp profile; a profile that disables seccomp or AppArmor is rejected, and so are
	// the SELinux options the baseline Pod Security Standard forbids (a user, a role, a
	// type other than container_t, container_init_t, container_kvm_t, container_engine_t).
	// +optional
	SecurityContext *corev1.PodSecurityContext `json:"securityContext,omitempty"`

	// Expose makes the App reachable from outside the cluster through an Ingress or a
	// Gateway API HTTPRoute. Needs spec.port.
	// +optional
	Expose *AppExpose `json:"expose,omitempty"`

	// Autoscaling runs a HorizontalPodAutoscaler that owns the replica count: while it is
	// set spec.replicas is ignored and cannot be changed (kubectl scale is refused).
	// +optional
	Autoscaling *AppAutoscaling `json:"autoscaling,omitempty"`

	// HealthCheck probes the App over HTTP (readiness, liveness and a startup probe)
	// instead of checking that the port accepts connections.
	// +optional
	HealthCheck *AppHealthCheck `json:"healthCheck,omitempty"`

	// HighAvailability adds a PodDisruptionBudget (maxUnavailable 1), spreads the pods over
	// nodes and rolls with maxUnavailable 0 whenever more than one replica may run. Unset,
	// it is on while spec.autoscaling is set and off otherwise (so Apps written before it
	// keep their exact Deployment); true turns it on for a fixed replicas > 1 too.
	// +optional
	HighAvailability *bool `json:"highAvailability,omitempty"`

	// Bindings project DatabaseClusters and CacheInstances into the pods as files under
	// $SERVICE_BINDING_ROOT/<name>/ (servicebinding.io workload projection). Until each is
	// Running the first time the App waits, with BindingsReady=False naming it; a service
	// that stops being Running later does not hold back the App's changes (BindingsReady
	// is False, reason BindingDegraded, while it is not).
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Bindings []AppBinding `json:"bindings,omitempty"`
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

	// DesiredReplicas is the number of pods the App wants now: spec.replicas (default 1),
	// or while spec.autoscaling is set the autoscaler's count, from the
	// HorizontalPodAutoscaler's status.desiredReplicas (before it reports one, the count it
	// keeps: the Deployment's replicas within minReplicas and maxReplicas). It is the
	// REPLICAS column of kubectl get apps; unset until the App is first reconciled.
	// +optional
	DesiredReplicas int32 `json:"desiredReplicas,omitempty"`

	// Selector is the label selector of the App's pods, for the scale subresource.
	// +optional
	Selector string `json:"selector,omitempty"`

	// Phase is Pending, Running, NotReady or Error.
	// +optional
	Phase AppPhase `json:"phase,omitempty"`

	// URL is where the App answers from outside the cluster, when spec.expose is set and
	// the address is known (a host, or the load balancer's address); through a Gateway,
	// only once its controller accepted the HTTPRoute.
	// +optional
	URL string `json:"url,omitempty"`

	// ObservedGeneration is the generation of the spec that was last reconciled successfully.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions are Ready, Progressing, Paused while paused, Contested while another
	// writer keeps changing a field of a child, and for the fields that need them Exposed,
	// EnvFromReady, BindingsReady and Autoscaling (whether the HorizontalPodAutoscaler can
	// scale).
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
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.status.desiredReplicas`
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
