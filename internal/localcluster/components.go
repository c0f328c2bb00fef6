package localcluster

import (
	"strconv"
)

// Component names, also the binary and log file names.
const (
	etcd              = "etcd"
	kubeAPIServer     = "kube-apiserver"
	controllerManager = "kube-controller-manager"
	scheduler         = "kube-scheduler"
	kwokController    = "kwok"
)

// serviceAccountIssuer is the issuer of service-account tokens, the in-cluster name of
// the API server as on a real cluster.
const serviceAccountIssuer = "https://kubernetes.default.svc.cluster.local"

func etcdArgs(l layout) []string {
	return []string{
		"--name=mooring",
		"--data-dir=" + l.etcdData,
		"--listen-client-urls=" + l.etcdURL(),
		"--advertise-client-urls=" + l.etcdURL(),
		"--listen-peer-urls=" + l.peerURL(),
		"--initial-advertise-peer-urls=" + l.peerURL(),
		"--initial-cluster=mooring=" + l.peerURL(),
		// Data written without fsync still reaches the page cache, so it survives a
		// killed process; only a machine crash can lose it, acceptable for dev state.
		"--unsafe-no-fsync",
	}
}

func apiserverArgs(l layout, saKey string) []string {
	// The endpoint reconciler rejects a loopback address, and nothing in a cluster
	// without containers needs the "kubernetes" Service to have endpoints. With a real
	// node the API server listens on the node's bridge address instead, and the
	// "kubernetes" Service leads pods there.
	reconciler := "--endpoint-reconciler-type=none"
	if l.host != "127.0.0.1" {
		reconciler = "--endpoint-reconciler-type=lease"
	}
	return []string{
		"--bind-address=" + l.host,
		"--advertise-address=" + l.host,
		reconciler,
		"--secure-port=" + strconv.Itoa(l.apiserver),
		"--etcd-servers=" + l.etcdURL(),
		"--tls-cert-file=" + l.pkiFile("serving.crt"),
		"--tls-private-key-file=" + l.pkiFile("serving.key"),
		"--client-ca-file=" + l.pkiFile("ca.crt"),
		"--authorization-mode=Node,RBAC",
		"--service-account-key-file=" + saKey,
		"--service-account-signing-key-file=" + saKey,
		"--service-account-issuer=" + serviceAccountIssuer,
		"--service-cluster-ip-range=" + serviceCIDR,
		"--allow-privileged=true",
	}
}

func controllerManagerArgs(l layout, saKey string) []string {
	kc := l.componentKubeconfig(controllerManager)
	return []string{
		"--kubeconfig=" + kc,
		"--authentication-kubeconfig=" + kc,
		"--authorization-kubeconfig=" + kc,
		"--client-ca-file=" + l.pkiFile("ca.crt"),
		// Without lookup the component does not wait for a front-proxy CA in
		// kube-system/extension-apiserver-authentication; this cluster has none, and
		// looking for it fills the log with errors.
		"--authentication-skip-lookup=true",
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(l.controllerManager),
		"--tls-cert-file=" + l.pkiFile("serving.crt"),
		"--tls-private-key-file=" + l.pkiFile("serving.key"),
		"--leader-elect=false",
		// nodeipam would need --cluster-cidr; kwok assigns pod IPs itself. Keep
		// nodelifecycle: it removes the not-ready taint once kwok marks a node Ready.
		"--controllers=*,-nodeipam",
		// Each controller acts as its own service account, as in a real cluster, so
		// RBAC mistakes show up here too.
		"--use-service-account-credentials=true",
		"--service-account-private-key-file=" + saKey,
		"--root-ca-file=" + l.pkiFile("ca.crt"),
		"--cluster-signing-cert-file=" + l.pkiFile("ca.crt"),
		"--cluster-signing-key-file=" + l.pkiFile("ca.key"),
		"--kube-api-qps=100",
		"--kube-api-burst=200",
	}
}

func schedulerArgs(l layout) []string {
	kc := l.componentKubeconfig(scheduler)
	return []string{
		"--kubeconfig=" + kc,
		"--authentication-kubeconfig=" + kc,
		"--authorization-kubeconfig=" + kc,
		"--client-ca-file=" + l.pkiFile("ca.crt"),
		"--authentication-skip-lookup=true", // see controllerManagerArgs
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(l.scheduler),
		"--tls-cert-file=" + l.pkiFile("serving.crt"),
		"--tls-private-key-file=" + l.pkiFile("serving.key"),
		"--leader-elect=false",
	}
}

// kwokArgs are kwok's flags; leaseSeconds is its nodes' lease duration.
func kwokArgs(l layout, leaseSeconds int) []string {
	return []string{
		"--kubeconfig=" + l.componentKubeconfig(kwokController),
		"--config=" + l.kwokConfig(),
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=" + kwokNodeSelector,
		// The default /24 runs out of pod IPs in a busy e2e run.
		"--cidr=10.244.0.0/16",
		// kwok keeps node leases only when this is set (kwokctl sets it; the binary
		// defaults to 0). Without leases the node lifecycle controller marks every node
		// NotReady after its grace period and every pod unready with it, and the
		// heartbeat-with-lease stage refreshes the node status only every ~10 minutes.
		// 40 s by default; nodeLeaseSeconds with real nodes (nodeLifecycleArgs).
		"--node-lease-duration-seconds=" + strconv.Itoa(leaseSeconds),
	}
}

// kwokEnv points kwok's work dir into the state dir, so a ~/.kwok/kwok.yaml of the
// developer's is not merged into the configuration.
func kwokEnv(l layout) []string {
	return []string{"KWOK_WORKDIR=" + l.kwok}
}
