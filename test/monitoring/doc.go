// Package monitoring tests what Mooring ships for monitoring against the metrics the
// operator really exports: the alerts in config/prometheus (promtool check and unit
// tests, a runbook per alert), the dashboards in config/grafana (generated from
// internal/dashboards) and docs/metrics.md. Every query must parse and use only metric
// names gathered from a running operator's registry, after it reconciled one object of
// every kind, took a backup that succeeded and one that failed, and won a leader election.
package monitoring
