// Package database turns a DatabaseCluster into a StatefulSet with a data volume per pod,
// a headless Service for the pods, a Service for the primary and, under the default name,
// a generated credentials Secret.
//
// Image contract: Mooring runs the Bitnami images (bitnami/postgresql, bitnami/mysql),
// whose entrypoints set up streaming (PostgreSQL) or binlog (MySQL) replication from
// environment variables. Pod 0 is the primary; every other pod starts as a replica of
// <name>-0.<name>-headless. The role is chosen at start from the pod's index label
// (apps.kubernetes.io/pod-index), so one pod template serves all pods.
package database
