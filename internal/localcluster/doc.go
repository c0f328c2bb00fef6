// Package localcluster starts and stops a real Kubernetes control plane on 127.0.0.1
// without containers, for development (mooring-dev) and end-to-end tests.
//
// A cluster is etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok,
// which simulates the nodes and the kubelet's pod lifecycle. Deployments roll out, Jobs
// complete, the garbage collector deletes owned objects and PVCs bind (through the
// cluster's own provisioner, volumes.go, which keeps each volume as a directory in the
// state directory), but no container ever runs on them: the simulated nodes exercise the
// API side of an operator, not the software in its images. A real node (realnode*.go)
// runs containers when the machine allows one.
//
// The binaries come from Options.BinDir (bin/k8s, built by hack/tools/build.sh). Every
// start picks free ports, so several clusters can run side by side; the etcd data,
// certificates and service-account keys in Options.StateDir are reused, so the cluster's
// state survives a restart until the state directory is deleted.
//
// A Supervisor (supervise.go), when given, restarts a component that exits on its own
// with a growing wait, and restarts one on request; mooring-dev shares one between the
// cluster, the operator and the portal. Without one, an exit is reported on Exited.
package localcluster
