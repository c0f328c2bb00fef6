// Package testutil is what Mooring's integration tests share: a real kube-apiserver and
// etcd (envtest) with Mooring's CRDs and the manager exactly as cmd/mooring wires it, a
// namespace per test, and polling with a deadline that reports what it last saw.
package testutil
