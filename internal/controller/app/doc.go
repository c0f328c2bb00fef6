// Package app turns an App into a Deployment, and, when asked for, a ConfigMap holding its
// configuration and a Service exposing its port. builders.go has the desired objects as
// pure functions, status.go derives the App's status from its Deployment, and handler.go
// plugs both into the engine.
package app
