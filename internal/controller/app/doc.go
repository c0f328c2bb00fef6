// Package app turns an App into a Deployment and, when its spec asks for them, a ConfigMap
// holding its configuration, a Service for its port, an Ingress or Gateway API HTTPRoute
// exposing it, a HorizontalPodAutoscaler and a PodDisruptionBudget, with its bindings to
// DatabaseClusters and CacheInstances projected into its pods (servicebinding.io).
//
// builders*.go have the desired objects as pure functions of the App and what its
// references resolved to (Resolved); refs.go looks those references up and reports what
// the App waits for; status.go derives the App's status from its Deployment; handler.go
// plugs it all into the engine, with the index and watches that bring an App back when a
// reference appears or changes.
package app
