// Package webhook holds Mooring's admission and conversion webhooks: defaults and checks
// that the CRD schema and its CEL rules cannot express (a version that depends on the
// engine, an image reference that must parse, an App whose children the API server would
// refuse, found by a dry run of the App controller's own builders), DatabaseCluster
// conversion between v1alpha1 and v1beta1, and the serving certificate the manager manages
// itself.
package webhook
