// Package e2e runs Mooring end to end: a real local cluster (etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler and kwok nodes) on free ports, the operator
// binary as a separate process serving its webhooks on localhost, and every check driven
// through kubectl as a user would.
package e2e
