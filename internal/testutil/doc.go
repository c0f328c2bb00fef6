// Package testutil is what Mooring's integration tests share: a real kube-apiserver and
// etcd (envtest) with Mooring's CRDs and the manager exactly as cmd/mooring wires it,
// started by a package's first test that needs it, a namespace per test, and polling with
// a deadline that reports what it last saw (the leaf package poll, which it re-exports). It also decides which tier a test belongs to
// and whether that tier runs here (MOORING_TEST_TIERS, bin/k8s): see docs/testing.md.
package testutil
