// Package dashboards builds Mooring's Grafana dashboards in Go with the Grafana
// Foundation SDK: Operator (the controllers themselves), Fleet (every resource by kind and
// phase, and what is not Ready), Databases and Backups, and Database (one DatabaseCluster
// from its instance managers' metrics). hack/dashboards writes them to
// config/grafana; a test fails when the committed JSON differs from what this package
// builds, and checks every query against the metrics Mooring exports.
package dashboards
