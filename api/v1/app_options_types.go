package v1

// The optional parts of an App beyond image, replicas, config, port, env and resources:
// how it is reached from outside, how it scales, how its health is checked and which
// Mooring services it is bound to. Every one of them is off when unset, and an App that
// sets none of them produces exactly the children it produced before they existed.

// AppExpose makes the App reachable from outside the cluster: an Ingress to its Service,
// or, with gateway set, a Gateway API HTTPRoute attached to that Gateway.
// +kubebuilder:validation:XValidation:rule="!has(self.gateway) || !has(self.tls)",message="spec.expose.tls is configured on the Gateway's listener; remove it when spec.expose.gateway is set",fieldPath=".tls"
// +kubebuilder:validation:XValidation:rule="!has(self.gateway) || !has(self.ingressClassName)",message="spec.expose.ingressClassName applies to an Ingress; remove it when spec.expose.gateway is set",fieldPath=".ingressClassName"
// +kubebuilder:validation:XValidation:rule="!has(self.tls) || has(self.host)",message="spec.expose.host is required with spec.expose.tls",fieldPath=".host"
type AppExpose struct {
	// Host is the DNS name the App answers on, e.g. "shop.example.com". Without it the
	// Ingress or HTTPRoute matches every host.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	Host string `json:"host,omitempty"`

	// Path is the URL path prefix routed to the App.
	// +kubebuilder:validation:Pattern=`^/`
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:default="/"
	// +optional
	Path string `json:"path,omitempty"`

	// IngressClassName selects the ingress controller; unset, the cluster's default class.
	// +kubebuilder:validation:MinLength=1
	// +optional
	IngressClassName *string `json:"ingressClassName,omitempty"`

	// TLS serves the host over HTTPS.
	// +optional
	TLS *AppTLS `json:"tls,omitempty"`

	// Gateway attaches an HTTPRoute to this Gateway instead of creating an Ingress.
	// Needs the Gateway API CRDs in the cluster; without them the App's Exposed condition
	// says so. With them, Exposed follows what the Gateway's controller reports in the
	// route's status: Unknown until it does, False with its reason when it does not accept
	// the route or cannot resolve its backend, True once it accepts it.
	// +optional
	Gateway *AppGatewayRef `json:"gateway,omitempty"`
}

// AppTLS is where the Ingress's certificate comes from: a Secret that exists, or a
// cert-manager ClusterIssuer that fills it.
// +kubebuilder:validation:XValidation:rule="has(self.secretName) || has(self.issuer)",message="spec.expose.tls needs secretName or issuer"
type AppTLS struct {
	// SecretName is the kubernetes.io/tls Secret with the certificate. With issuer set it
	// defaults to "<app>-tls", which cert-manager creates.
	// +kubebuilder:validation:MinLength=1
	// +optional
	SecretName string `json:"secretName,omitempty"`

	// Issuer names a cert-manager ClusterIssuer; Mooring sets the
	// cert-manager.io/cluster-issuer annotation on the Ingress.
	// +kubebuilder:validation:MinLength=1
	// +optional
	Issuer string `json:"issuer,omitempty"`
}

// AppGatewayRef names the Gateway (and optionally its listener) an HTTPRoute attaches to.
type AppGatewayRef struct {
	// Name of the Gateway.
	// +kubebuilder:validation:MinLength=1
	// +required
	Name string `json:"name"`

	// Namespace of the Gateway; unset, the App's namespace.
	// +kubebuilder:validation:MinLength=1
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// SectionName is the Gateway listener to attach to; unset, every listener that allows it.
	// +kubebuilder:validation:MinLength=1
	// +optional
	SectionName string `json:"sectionName,omitempty"`
}

// AppAutoscaling hands the replica count to a HorizontalPodAutoscaler.
// +kubebuilder:validation:XValidation:rule="!has(self.minReplicas) || self.minReplicas <= self.maxReplicas",message="spec.autoscaling.minReplicas must not exceed maxReplicas",fieldPath=".minReplicas"
type AppAutoscaling struct {
	// MinReplicas is the fewest pods the autoscaler keeps.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:default=1
	// +optional
	MinReplicas *int32 `json:"minReplicas,omitempty"`

	// MaxReplicas is the most pods the autoscaler may run.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	// +required
	MaxReplicas int32 `json:"maxReplicas"`

	// TargetCPUUtilizationPercentage is the average CPU use, in per cent of the pods'
	// CPU request, the autoscaler aims for. When neither target is set it is 80.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	// +optional
	TargetCPUUtilizationPercentage *int32 `json:"targetCPUUtilizationPercentage,omitempty"`

	// TargetMemoryUtilizationPercentage is the average memory use, in per cent of the
	// pods' memory request, the autoscaler aims for.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	// +optional
	TargetMemoryUtilizationPercentage *int32 `json:"targetMemoryUtilizationPercentage,omitempty"`
}

// AppHealthCheck replaces the TCP readiness check with HTTP readiness, liveness and
// startup probes.
type AppHealthCheck struct {
	// Path is the HTTP path probed; any status from 200 to 399 is healthy.
	// +kubebuilder:validation:Pattern=`^/`
	// +kubebuilder:default="/"
	// +optional
	Path string `json:"path,omitempty"`

	// Port is probed; unset, spec.port.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +optional
	Port *int32 `json:"port,omitempty"`

	// InitialDelaySeconds before the first (startup) probe.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=3600
	// +optional
	InitialDelaySeconds *int32 `json:"initialDelaySeconds,omitempty"`

	// PeriodSeconds between probes.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=3600
	// +kubebuilder:default=10
	// +optional
	PeriodSeconds *int32 `json:"periodSeconds,omitempty"`

	// FailureThreshold is how many failed probes in a row make a pod unready (readiness)
	// or restart it (liveness).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +kubebuilder:default=3
	// +optional
	FailureThreshold *int32 `json:"failureThreshold,omitempty"`
}

// AppBinding projects a Mooring DatabaseCluster or CacheInstance into the App's pods, the
// servicebinding.io way: files under $SERVICE_BINDING_ROOT/<name>/ and, with env, variables.
type AppBinding struct {
	// Name of the binding: the directory under $SERVICE_BINDING_ROOT and, upper-cased with
	// "-" as "_", the prefix of its environment variables.
	// +kubebuilder:validation:MaxLength=50
	// +kubebuilder:validation:Pattern=`^[a-z]([-a-z0-9]*[a-z0-9])?$`
	// +required
	Name string `json:"name"`

	// Ref is the provisioned service, in the App's namespace.
	// +required
	Ref AppBindingRef `json:"ref"`

	// Env also sets <NAME>_TYPE, <NAME>_HOST, <NAME>_PORT, ... (and <NAME>_USERNAME,
	// <NAME>_PASSWORD from the credentials Secret). Pods roll when the values change.
	// +optional
	Env bool `json:"env,omitempty"`
}

// AppBindingRef names a Mooring provisioned service.
type AppBindingRef struct {
	// Kind is DatabaseCluster or CacheInstance.
	// +kubebuilder:validation:Enum=DatabaseCluster;CacheInstance
	// +required
	Kind string `json:"kind"`

	// Name of the DatabaseCluster or CacheInstance.
	// +kubebuilder:validation:MinLength=1
	// +required
	Name string `json:"name"`
}

// The kinds an App can bind to.
const (
	BindingKindDatabaseCluster = KindDatabaseCluster
	BindingKindCacheInstance   = KindCacheInstance
)

// ServiceBindingStatus makes a Mooring kind a provisioned service (servicebinding.io): it
// names what an App's binding projects.
type ServiceBindingStatus struct {
	// Name is the ConfigMap with the binding's non-secret entries: type, provider, host,
	// port and, for databases, database.
	// +required
	Name string `json:"name"`

	// SecretName is the Secret with the secret entries, username and password; empty when
	// the service has no credentials.
	// +optional
	SecretName string `json:"secretName,omitempty"`
}
