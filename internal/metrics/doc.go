// Package metrics exports what an on-call engineer needs to see about Mooring's resources
// as Prometheus metrics on the operator's metrics endpoint.
//
// The resource metrics (mooring_resource_*, mooring_backup_*) are computed at scrape time
// from the manager's informer cache: there are no per-object gauges to keep in sync, and a
// deleted object's series disappear with it. Only the elected leader emits them, so two
// replicas never report the same object twice. Build information and the webhook serving
// certificate's expiry are emitted by every replica: each one serves webhooks with its own
// view of the certificate.
package metrics
