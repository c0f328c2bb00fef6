package localcluster

import (
	"encoding/json"
	"fmt"
)

// The real node's network. Every range is private to this machine: the pods sit on the
// bridge, the Service range is routed onto the same bridge (kube-proxy's NAT rules turn a
// ClusterIP into a pod or host address before the packet leaves it), and the rest of the
// pod range, like kwok's simulated pod range, is unreachable, so that an address nothing
// answers fails on the machine instead of leaving through its default route.
const (
	// RealNodeName is the real node's name; the simulated ones are mooring-node-<i>.
	RealNodeName = "mooring-real"
	bridgeName   = "mooring0"
	// nodeIP is the bridge's (the host's) address on the pod network: the node's
	// InternalIP, where the API server, CoreDNS and the kubelet listen for pods.
	nodeIP       = "10.88.0.1"
	podSubnet    = "10.88.0.0/24"
	podRange     = "10.88.0.0/16"
	kwokPodRange = "10.244.0.0/16"
	// DNSServiceIP is kube-dns's ClusterIP, the pods' nameserver.
	DNSServiceIP  = "10.96.0.10"
	clusterDomain = "cluster.local"
	// sandboxImage is containerd's pause image, built locally (internal/nodeimage).
	sandboxImage = "mooring.local/pause:1"
	// cgroupRoot parents every real node's cgroup (member.cgroupRoot), and so every pod
	// cgroup, so tear-down finds what to kill and remove.
	cgroupRoot = "/mooring-node"
	cniBinDir  = "/usr/lib/cni"
)

// The local cluster's node lifecycle is shortened when it has real nodes, so that a
// stopped node (NodeStop) is NotReady, and its pods out of their Services' endpoints,
// within about 20 s instead of the default 50 s: the tests of node loss wait for it, and
// a person trying a failover by hand should not wait a minute. Real clusters keep
// Kubernetes' defaults, and nothing in Mooring depends on these values. Every node's
// lease is renewed each quarter of nodeLeaseSeconds (the kubelet's and kwok's), so a
// live node renews four times within the grace period, busy machine or not.
const (
	nodeLeaseSeconds = 20
	nodeGracePeriod  = "20s"
	nodeMonitorEvery = "2s"
)

// nodeLifecycleArgs are the controller-manager's flags for the shortened lifecycle.
func nodeLifecycleArgs() []string {
	return []string{"--node-monitor-grace-period=" + nodeGracePeriod, "--node-monitor-period=" + nodeMonitorEvery}
}

// nodePaths are the real node's files: its long-lived state under the cluster's state
// directory, and its sockets and runtime state under a short path in /run (unix socket
// paths are limited to 108 bytes, which a test's temporary state directory can exceed).
type nodePaths struct {
	dir            string // <StateDir>/node
	run            string // /run/mooring-node
	containerdRoot string
	kubeletRoot    string
	podLogs        string
	cniConf        string
	cniData        string
	configs        string
}

// newNodePaths lays out the real node's directories under the cluster's state directory;
// its runtime sockets are always under realNodeRunDir (one real node per machine).
func newNodePaths(stateDir string) nodePaths {
	return nodePathsUnder(stateDir+"/node", realNodeRunDir)
}

// nodePathsUnder lays out one node's files in dir and its runtime state in run.
func nodePathsUnder(dir, run string) nodePaths {
	return nodePaths{
		dir:            dir,
		run:            run,
		containerdRoot: dir + "/containerd",
		kubeletRoot:    dir + "/kubelet",
		podLogs:        dir + "/pod-logs",
		cniConf:        dir + "/cni/net.d",
		cniData:        dir + "/cni/ipam",
		configs:        dir + "/config",
	}
}

func (p nodePaths) containerdState() string  { return p.run + "/containerd" }
func (p nodePaths) containerdSocket() string { return p.run + "/containerd.sock" }

// registryHosts is containerd's registry config_path (realnode_registry.go).
func (p nodePaths) registryHosts() string { return p.configs + "/registry" }
func (p nodePaths) config(name string) string {
	return p.configs + "/" + name
}

// containerdConfig is containerd's configuration: its own root, state and socket, CRI
// with the local pause image and the CNI configuration of this node, and
// restrict_oom_score_adj, because these machines lack CAP_SYS_RESOURCE and runc fails to
// raise a container's OOM score adjustment without it. Network namespaces are mounted
// under the state directory, so tear-down finds every one of them. Registries are
// configured in config_path, whose only host is the local refusal (realnode_registry.go).
func containerdConfig(p nodePaths) string {
	return fmt.Sprintf(`version = 2
root = %q
state = %q
oom_score = 0
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = %q

[ttrpc]
  address = %q

[plugins."io.containerd.internal.v1.opt"]
  path = %q

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = %q
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %q
    conf_dir = %q
    max_conf_num = 1
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
`, p.containerdRoot, p.containerdState(), p.containerdSocket(), p.run+"/containerd-ttrpc.sock",
		p.dir+"/opt", sandboxImage, p.registryHosts(), cniBinDir, p.cniConf)
}

// cniConfig is a node's pod network: the shared bridge with host-local addresses from
// the node's own pod subnet, the host (the node's address) as gateway for the real
// nodes' pod range (the other nodes' pods) and the Service range only (no default route,
// so a pod has no way towards anything outside the machine), hairpin mode so a pod
// reaches itself through its own Service, and no masquerading. The plugin does not
// manage the bridge's addresses (isGateway false): it refuses a bridge that has an
// address other than its own gateway's, which every node but one would find;
// networkUp gives the bridge every node's address instead.
func cniConfig(m member) ([]byte, error) {
	conf := map[string]any{
		"cniVersion": "1.0.0",
		"name":       "mooring",
		"plugins": []any{
			map[string]any{
				"type":        "bridge",
				"bridge":      bridgeName,
				"isGateway":   false,
				"ipMasq":      false,
				"hairpinMode": true,
				"ipam": map[string]any{
					"type":    "host-local",
					"dataDir": m.paths.cniData,
					"ranges":  [][]map[string]string{{{"subnet": m.podSubnet, "gateway": m.ip}}},
					"routes":  []map[string]string{{"dst": serviceCIDR}, {"dst": podRange}},
				},
			},
			map[string]any{"type": "portmap", "capabilities": map[string]bool{"portMappings": true}},
		},
	}
	return json.MarshalIndent(conf, "", "  ")
}

// kubeletConfig is the KubeletConfiguration that runs on these machines: cgroup v1 with
// the cgroupfs driver (failCgroupV1: false), no swap check, no node-allocatable
// enforcement or hard eviction (a development machine's disk and memory are shared with
// everything else on it), image garbage collection only on a full disk (the images are
// built locally and cannot be pulled again), client certificates from the cluster CA
// and authorization by the API server.
//
// The node's lease lasts nodeLeaseSeconds (renewed every quarter of it), which the
// controller-manager's shortened grace period (nodeLifecycleArgs) is measured against.
func kubeletConfig(m member, pk kubeletPKI) string {
	p := m.paths
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: %s
containerRuntimeEndpoint: unix://%s
failSwapOn: false
enforceNodeAllocatable: []
evictionHard: {}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
address: %s
port: %d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %d
tlsCertFile: %s
tlsPrivateKeyFile: %s
rotateCertificates: false
serverTLSBootstrap: false
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: %s
authorization:
  mode: Webhook
clusterDNS: [%s]
clusterDomain: %s
resolvConf: %s
podLogsDir: %s
staticPodPath: ""
maxPods: 110
serializeImagePulls: false
nodeStatusReportFrequency: 10s
nodeLeaseDurationSeconds: %d
`, m.cgroupRoot(), p.containerdSocket(), m.ip, m.ports.kubelet, m.ports.kubeletHealthz, pk.servingCert, pk.servingKey,
		pk.clientCA, DNSServiceIP, clusterDomain, p.config("resolv.conf"), p.podLogs, nodeLeaseSeconds)
}

// kubeletPKI are the files the kubelet serves and verifies clients with.
type kubeletPKI struct {
	servingCert, servingKey, clientCA string
}

func kubeletArgs(m member, kubeconfig string) []string {
	return []string{
		"--config=" + m.paths.config("kubelet.yaml"),
		"--kubeconfig=" + kubeconfig,
		"--root-dir=" + m.paths.kubeletRoot,
		"--hostname-override=" + m.name,
		"--node-ip=" + m.ip,
		"--node-labels=type=real",
	}
}

// kubeProxyConfig runs kube-proxy in iptables mode. One kube-proxy serves every real
// node: their pods share the host's network stack (one bridge, one set of NAT rules),
// so the rules it writes for the first node translate every node's pods' Service
// traffic. NodePorts on the first node's address alone (never on the machine's outside interfaces), and conntrack limits
// left as the machine has them (raising them needs CAP_SYS_RESOURCE's sibling sysctls).
func kubeProxyConfig(kubeconfig string, healthzPort, metricsPort int) string {
	return fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: %s
mode: iptables
clusterCIDR: %s
hostnameOverride: %s
bindAddress: %s
healthzBindAddress: 127.0.0.1:%d
metricsBindAddress: 127.0.0.1:%d
nodePortAddresses: ["%s/32"]
conntrack:
  maxPerCore: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
iptables:
  localhostNodePorts: false
`, kubeconfig, podRange, RealNodeName, nodeIP, healthzPort, metricsPort, nodeIP)
}

// corefile serves the cluster's names from the API server and nothing else: there is
// no forward plugin, so a name outside cluster.local is answered on the machine
// (NXDOMAIN, from the catch-all block) instead of being sent to a resolver outside it.
func corefile(kubeconfig string, healthPort, readyPort int) string {
	return fmt.Sprintf(`%[4]s:53 in-addr.arpa:53 ip6.arpa:53 {
    bind %[1]s
    errors
    health 127.0.0.1:%[2]d
    ready 127.0.0.1:%[3]d
    kubernetes %[4]s in-addr.arpa ip6.arpa {
        kubeconfig %[5]s
        pods insecure
        ttl 5
    }
    cache 5
}
.:53 {
    bind %[1]s
    template ANY ANY {
        rcode NXDOMAIN
    }
}
`, nodeIP, healthPort, readyPort, clusterDomain, kubeconfig)
}
