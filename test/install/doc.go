// Package install installs, upgrades and uninstalls Mooring with its Helm chart
// (charts/mooring, through the Helm v4 Go library) on a local cluster of its own, the way
// a platform team would, and checks what the API server does with the chart's objects.
//
// Pods do not run images on kwok nodes, so the operator the chart deploys runs on the
// host instead: the operator binary built from the checkout, with the chart's Deployment
// arguments, as the chart's ServiceAccount (so with the chart's RBAC), keeping its
// certificate in the chart's Secret and injecting its CA into the chart's webhook
// configurations and CRD itself. The API server runs with --enable-aggregator-routing, so
// it calls the chart's webhook Service at its endpoints, and the test gives that Service
// one EndpointSlice that points at the host's address where the operator listens: the
// part a kubelet and the endpoint controller would play for a running pod. The chart's
// Deployment is installed with a nodeSelector no node matches, so its pods stay Pending
// and never become endpoints the API server could not reach.
package install
