// Package crdmigrator moves stored custom resources to their CRD's current storage
// version and then trims the CRD's status.storedVersions to that version alone, as Cluster
// API's crdmigrator and the Kubernetes storage version migrator do. Once storedVersions no
// longer lists an old version, a later release can stop serving it and remove it from the
// CRD; the API server refuses that while any stored object might still use it.
//
// The elected leader runs it once at start. It costs two reads per CRD when nothing needs
// migrating, and never writes then.
package crdmigrator
