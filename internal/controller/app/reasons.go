package app

// Condition types of an App beyond the engine's Ready and Progressing; each is present
// only while the field it reports on is set.
const (
	// ConditionExposed is True when the Ingress of spec.expose exists, or when the Gateway's
	// controller accepted its HTTPRoute (Unknown until it reports, False with its reason
	// when it refuses it).
	ConditionExposed = "Exposed"
	// ConditionEnvFromReady is True when every ConfigMap and Secret of spec.envFrom exists.
	ConditionEnvFromReady = "EnvFromReady"
	// ConditionBindingsReady is True when every service of spec.bindings is Running. False
	// holds the App back only until each binding first resolved (reason BindingNotFound or
	// BindingNotRunning); after that it informs (BindingDegraded) and the App still rolls out.
	ConditionBindingsReady = "BindingsReady"
	// ConditionAutoscaling is the HorizontalPodAutoscaler's ability to scale: False with
	// its reason when its AbleToScale or ScalingActive condition is False (most often
	// FailedGetResourceMetric: the pods request no CPU or memory for a utilization target),
	// Unknown until it reports. The pods may all run meanwhile, so Ready does not say it.
	ConditionAutoscaling = "Autoscaling"
	// ConditionBindingEnvShadowed is True (reason SpecEnvWins) while spec.env sets a
	// variable an env binding sets too: the pods get spec.env's value and not the
	// binding's. The webhook refuses that on new Apps; this reports the ones admitted
	// before it did. Absent otherwise.
	ConditionBindingEnvShadowed = "BindingEnvShadowed"
)

// Condition and event reasons.
const (
	ReasonIngressApplied = "IngressApplied"
	// ReasonHTTPRouteApplied is Exposed=Unknown: the HTTPRoute is applied, the Gateway's
	// controller has not reported on it yet.
	ReasonHTTPRouteApplied  = "HTTPRouteApplied"
	ReasonHTTPRouteAccepted = "HTTPRouteAccepted"
	// ReasonHTTPRouteNotAccepted stands in for a Gateway controller's reason that is not
	// a valid condition reason.
	ReasonHTTPRouteNotAccepted   = "HTTPRouteNotAccepted"
	ReasonGatewayAPINotInstalled = "GatewayAPINotInstalled"
	ReasonEnvFromFound           = "AllFound"
	ReasonEnvFromMissing         = "EnvFromNotFound"
	ReasonBindingsReady          = "AllRunning"
	ReasonBindingNotFound        = "BindingNotFound"
	ReasonBindingNotRunning      = "BindingNotRunning"
	ReasonBindingDegraded        = "BindingDegraded"
	ReasonSpecEnvWins            = "SpecEnvWins"
	ReasonWaiting                = "WaitingForReferences"
	ReasonAutoscalerPending      = "AutoscalerPending"
	ReasonAutoscalerActive       = "ScalingActive"
	// ReasonAutoscalerCannotScale stands in for an HPA reason that is not a valid
	// condition reason.
	ReasonAutoscalerCannotScale = "AutoscalerCannotScale"
)

// HandOverFieldManager holds the Deployment's replicas between Mooring letting go of them
// (spec.autoscaling set) and the HorizontalPodAutoscaler's first scale.
const HandOverFieldManager = "mooring-autoscaling-handover"

// RefsField indexes Apps by what they reference ("ConfigMap/<name>", "Secret/<name>",
// "DatabaseCluster/<name>", "CacheInstance/<name>"), so an object that appears or
// changes finds the Apps waiting for it without a list of every App.
const RefsField = "spec.refs"
