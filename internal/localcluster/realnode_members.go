package localcluster

import (
	"fmt"
	"strconv"
)

// MaxRealNodes is how many real nodes one machine runs: each is a containerd and a
// kubelet (about 150 MB of memory and a share of 2 cores at rest), and the pod ranges
// 10.88.<i>.0/24 are numbered from one octet. Four keep a development machine usable.
const MaxRealNodes = 4

// member is one real node of the cluster: a kubelet with its own containerd (root,
// state, socket), its own address on the bridge, pod range (host-local IPAM) and cgroup
// root. The first is RealNodeName at nodeIP, whose address the control plane shares
// (the API server and CoreDNS listen there); the others are RealNodeName-<n>.
type member struct {
	index     int
	name      string
	ip        string // the node's InternalIP, the gateway of its pods
	podSubnet string
	paths     nodePaths
	ports     memberPorts
}

// memberPorts are one node's kubelet ports: the API server reaches the kubelet on the
// node's address, its health on 127.0.0.1.
type memberPorts struct{ kubelet, kubeletHealthz int }

// realNodeName is the name of the i-th real node (from 0).
func realNodeName(i int) string {
	if i == 0 {
		return RealNodeName
	}
	return RealNodeName + "-" + strconv.Itoa(i+1)
}

// RealNodeNames are the names of a cluster's n real nodes, the first RealNodeName.
func RealNodeNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = realNodeName(i)
	}
	return names
}

// newMember lays out the i-th node. The first node's files are where a cluster of one
// node has always had them (<state>/node, /run/mooring-node); each further node's are a
// directory named after it inside those, so that removing the first node's directories
// (and the shims and mounts under them) removes every node's.
func newMember(root nodePaths, i int) member {
	m := member{index: i, name: realNodeName(i), ip: fmt.Sprintf("10.88.%d.1", i),
		podSubnet: fmt.Sprintf("10.88.%d.0/24", i), paths: root}
	if i > 0 {
		m.paths = nodePathsUnder(root.dir+"/"+m.name, root.run+"/"+m.name)
	}
	return m
}

// component is the name of one of the node's processes: the first node's are named as
// the component ("kubelet"), the others' after their node ("kubelet-mooring-real-2").
func (m member) component(base string) string {
	if m.index == 0 {
		return base
	}
	return base + "-" + m.name
}

// cgroupRoot is the node's own cgroup below the machine's cgroupRoot: its kubelet's
// cgroupRoot, and what NodeStop freezes.
func (m member) cgroupRoot() string { return cgroupRoot + "/" + m.name }

// members lays out a cluster's n real nodes.
func members(root nodePaths, n int) []member {
	ms := make([]member, n)
	for i := range ms {
		ms[i] = newMember(root, i)
	}
	return ms
}
