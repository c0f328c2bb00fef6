package localcluster

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestRealNodeLayout: every node has its own name, address, pod range, cgroup, files and
// component names; the first is laid out as a cluster of one node always was, and every
// further node's files are inside the first's (so removing those removes all).
func TestRealNodeLayout(t *testing.T) {
	ms := members(newNodePaths("/s"), 2)
	first, second := ms[0], ms[1]
	for _, tc := range []struct{ what, got, want string }{
		{"first name", first.name, "mooring-real"},
		{"first address", first.ip, nodeIP},
		{"first pods", first.podSubnet, podSubnet},
		{"first socket", first.paths.containerdSocket(), "/run/mooring-node/containerd.sock"},
		{"first dir", first.paths.dir, "/s/node"},
		{"first kubelet", first.component(kubeletComponent), "kubelet"},
		{"first cgroup", first.cgroupRoot(), "/mooring-node/mooring-real"},
		{"second name", second.name, "mooring-real-2"},
		{"second address", second.ip, "10.88.1.1"},
		{"second pods", second.podSubnet, "10.88.1.0/24"},
		{"second socket", second.paths.containerdSocket(), "/run/mooring-node/mooring-real-2/containerd.sock"},
		{"second containerd root", second.paths.containerdRoot, "/s/node/mooring-real-2/containerd"},
		{"second kubelet", second.component(kubeletComponent), "kubelet-mooring-real-2"},
		{"second cgroup", second.cgroupRoot(), "/mooring-node/mooring-real-2"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %q, want %q", tc.what, tc.got, tc.want)
		}
	}
	if got := RealNodeNames(3); !slices.Equal(got, []string{"mooring-real", "mooring-real-2", "mooring-real-3"}) {
		t.Errorf("RealNodeNames(3) = %v", got)
	}
	// Each node's pods take addresses from its own range, with its address as gateway,
	// and reach the other nodes' pods and the Services through it.
	raw, err := cniConfig(second)
	if err != nil {
		t.Fatal(err)
	}
	var conf struct {
		Plugins []struct {
			IsGateway bool `json:"isGateway"`
			IPAM      struct {
				DataDir string                `json:"dataDir"`
				Ranges  [][]map[string]string `json:"ranges"`
				Routes  []map[string]string   `json:"routes"`
			} `json:"ipam"`
		} `json:"plugins"`
	}
	if err := json.Unmarshal(raw, &conf); err != nil {
		t.Fatal(err)
	}
	ipam := conf.Plugins[0].IPAM
	if r := ipam.Ranges[0][0]; r["subnet"] != "10.88.1.0/24" || r["gateway"] != "10.88.1.1" || ipam.DataDir != second.paths.cniData {
		t.Errorf("second node's IPAM %+v; want its own subnet, gateway and data directory", ipam)
	}
	if len(ipam.Routes) != 2 || ipam.Routes[0]["dst"] != serviceCIDR || ipam.Routes[1]["dst"] != podRange {
		t.Errorf("routes %v; want the Service range and the real nodes' pod range", ipam.Routes)
	}
	if conf.Plugins[0].IsGateway {
		t.Error("isGateway true: the bridge plugin would refuse a bridge holding another node's address")
	}
	kubelet := kubeletConfig(second, kubeletPKI{})
	for _, want := range []string{"cgroupRoot: /mooring-node/mooring-real-2\n", "address: 10.88.1.1\n",
		"containerRuntimeEndpoint: unix:///run/mooring-node/mooring-real-2/containerd.sock\n"} {
		if !strings.Contains(kubelet, want) {
			t.Errorf("second node's kubelet configuration lacks %q:\n%s", want, kubelet)
		}
	}
}

// TestRealNodeCountRefused: more real nodes than one machine runs, or fewer than none,
// are refused with the reason before anything starts; none asked for means one.
func TestRealNodeCountRefused(t *testing.T) {
	bin := t.TempDir()
	for _, n := range []int{-1, MaxRealNodes + 1} {
		_, err := Options{BinDir: bin, StateDir: t.TempDir(), RealNode: RealNodeOn, RealNodes: n}.complete()
		if err == nil || !strings.Contains(err.Error(), "one machine runs 1 to 4") {
			t.Errorf("%d real nodes: %v; want refused with the limit and why", n, err)
		}
	}
}
