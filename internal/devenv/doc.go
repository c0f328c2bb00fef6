// Package devenv installs Mooring on a cluster for an operator that runs on this host
// (make run, the e2e suite): the CRDs, the webhook configurations and the DatabaseCluster
// conversion webhook, all pointing at https://localhost:<port>, where the operator serves
// them with a certificate it makes itself and whose CA it injects. Production uses the
// Service-based configuration of config/default instead.
package devenv
