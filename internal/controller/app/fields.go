package app

// HandOverFieldManager holds the Deployment's replicas between Mooring letting go of them
// (spec.autoscaling set) and the HorizontalPodAutoscaler's first scale.
const HandOverFieldManager = "mooring-autoscaling-handover"

// RefsField indexes Apps by what they reference ("ConfigMap/<name>", "Secret/<name>",
// "DatabaseCluster/<name>", "CacheInstance/<name>"), so an object that appears or
// changes finds the Apps waiting for it without a list of every App.
const RefsField = "spec.refs"
