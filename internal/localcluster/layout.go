package localcluster

import (
	"path/filepath"
	"strconv"
)

// layout holds the files of one cluster in its state directory and the ports of the
// current run.
type layout struct {
	state       string
	logs        string // <state>/logs/<component>.log
	pki         string // CA, certificates, service-account key
	etcdData    string
	kubeconfig  string // admin kubeconfig for users and tests
	kubeconfigs string // one kubeconfig per component
	kwok        string // kwok's work dir and stage config

	etcdClient, etcdPeer, apiserver, controllerManager, scheduler int
	// host is the API server's address: 127.0.0.1, or nodeIP when a real node's pods
	// must reach it too.
	host string
}

func newLayout(state string) layout {
	return layout{
		state:       state,
		logs:        filepath.Join(state, "logs"),
		pki:         filepath.Join(state, "pki"),
		etcdData:    filepath.Join(state, "etcd"),
		kubeconfig:  filepath.Join(state, "kubeconfig"),
		kubeconfigs: filepath.Join(state, "kubeconfigs"),
		kwok:        filepath.Join(state, "kwok"),
		host:        "127.0.0.1",
	}
}

// logFile has a pointer receiver: the real nodes' components start (and read it) while
// the control plane's start fills in the ports.
func (l *layout) logFile(component string) string { return filepath.Join(l.logs, component+".log") }

func (l layout) componentKubeconfig(component string) string {
	return filepath.Join(l.kubeconfigs, component+".kubeconfig")
}

func (l layout) kwokConfig() string { return filepath.Join(l.kwok, "stages.yaml") }

func (l layout) pkiFile(name string) string { return filepath.Join(l.pki, name) }

func (l layout) etcdURL() string   { return "http://127.0.0.1:" + strconv.Itoa(l.etcdClient) }
func (l layout) peerURL() string   { return "http://127.0.0.1:" + strconv.Itoa(l.etcdPeer) }
func (l layout) serverURL() string { return "https://" + l.host + ":" + strconv.Itoa(l.apiserver) }
