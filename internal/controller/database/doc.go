// Package database turns a DatabaseCluster into a StatefulSet with a data volume per pod,
// a headless Service for the pods, a Service for the primary and one for the replicas, a
// binding ConfigMap, a PodDisruptionBudget while there is more than one instance and, under
// the default name, a generated credentials Secret.
//
// The pods run the official server images with Mooring's instance manager as their first
// process (internal/instance), which initialises, configures and runs the server. Pod 0 is
// the primary; every other pod replicates from <name>-0.<name>-headless. The pods prefer
// one per node (package availability).
package database
