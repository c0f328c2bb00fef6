package localcluster

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// Component names of the real node, also their log file names.
const (
	containerdComponent = "containerd"
	kubeletComponent    = "kubelet"
	kubeProxyComponent  = "kube-proxy"
	corednsComponent    = "coredns"
)

// nodeIdentities are the real nodes' client certificates: each kubelet as its node
// (the Node authorizer's user), kube-proxy as the user the default policy binds
// system:node-proxier to, CoreDNS as a user of its own with read access to what it
// serves, and the API server's identity towards the kubelets.
func (n *realNode) nodeIdentities() map[string]certSpec {
	ids := map[string]certSpec{
		kubeProxyComponent:         {cn: "system:kube-proxy"},
		corednsComponent:           {cn: corednsUser},
		"apiserver-kubelet-client": {cn: "kube-apiserver-kubelet-client", orgs: []string{"system:masters"}},
	}
	for _, m := range n.members {
		ids[m.component(kubeletComponent)] = certSpec{cn: "system:node:" + m.name, orgs: []string{"system:nodes"}}
	}
	return ids
}

const corednsUser = "mooring:coredns"

// writeNodePKI writes the node components' kubeconfigs and each kubelet's serving
// certificate, and returns the API server's flags for reaching the kubelets.
func (n *realNode) writeNodePKI(ca *pki, l layout) ([]string, error) {
	var apiserverArgs []string
	for name, spec := range n.nodeIdentities() {
		spec.name = name
		kp, err := ca.leaf(spec)
		if err != nil {
			return nil, err
		}
		if name == "apiserver-kubelet-client" {
			apiserverArgs = []string{
				"--kubelet-client-certificate=" + kp.certPath,
				"--kubelet-client-key=" + kp.keyPath,
				"--kubelet-certificate-authority=" + ca.caPath,
				"--kubelet-preferred-address-types=InternalIP",
			}
			continue
		}
		if err := writeKubeconfig(l.componentKubeconfig(name), l.serverURL(), ca.caPEM, kp); err != nil {
			return nil, err
		}
	}
	n.kubeletPKI = map[string]kubeletPKI{}
	for _, m := range n.members {
		serving, err := ca.leaf(certSpec{name: m.component("kubelet-serving"), cn: m.name, server: true,
			ips: []string{m.ip}, dnsNames: []string{m.name}})
		if err != nil {
			return nil, err
		}
		n.kubeletPKI[m.name] = kubeletPKI{servingCert: serving.certPath, servingKey: serving.keyPath, clientCA: ca.caPath}
	}
	return apiserverArgs, nil
}

// isComponent reports whether name is the component base or a further node's one
// (base-<node>, member.component).
func isComponent(name, base string) bool {
	return name == base || strings.HasPrefix(name, base+"-"+RealNodeName)
}

// isNodeComponent reports whether a component belongs to the real nodes.
func isNodeComponent(name string) bool {
	for _, base := range []string{containerdComponent, kubeletComponent, kubeProxyComponent, corednsComponent} {
		if isComponent(name, base) {
			return true
		}
	}
	return false
}

// startRuntimes starts, beside the control plane (they need nothing of it), every real
// node's containerd with the images in it, the nodes side by side; startRealNode waits
// for them. Each node waits mostly on its own containerd storing the images, so a
// second node adds little, and the control plane's start hides most of it.
// The members are read-only from here on: their ports are picked first.
func (c *Cluster) startRuntimes(ctx context.Context, o Options) {
	c.runtimes = make(chan struct{})
	err := os.MkdirAll(c.layout.logs, 0o755)
	if err == nil {
		c.node.ports, err = c.node.pickNodePorts()
	}
	if err != nil {
		c.runtimesErr = err
		close(c.runtimes)
		return
	}
	go func() {
		defer close(c.runtimes)
		c.runtimesErr = c.startRuntimesNow(ctx, o)
	}()
}

func (c *Cluster) startRuntimesNow(ctx context.Context, o Options) error {
	n := c.node
	var err error
	n.registry, err = startRegistryRefusal(func(ctx context.Context) ([]string, error) {
		return listImages(ctx, n.paths.containerdSocket())
	})
	if err != nil {
		return err
	}
	images, err := o.NodeImages(ctx)
	if err != nil {
		return fmt.Errorf("node images: %w", err)
	}
	errs := make([]error, len(n.members))
	var wg sync.WaitGroup
	for i, m := range n.members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.startRuntime(ctx, o, m, images)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// startRuntime writes one node's runtime configuration, starts its containerd and
// stores the images in it.
func (c *Cluster) startRuntime(ctx context.Context, o Options, m member, images []string) error {
	cni, err := cniConfig(m)
	if err != nil {
		return err
	}
	if err := writeRegistryConfig(m.paths, c.node.registry.url()); err != nil {
		return err
	}
	files := map[string][]byte{
		m.paths.config("containerd.toml"):                     []byte(containerdConfig(m.paths)),
		filepath.Join(m.paths.cniConf, "10-mooring.conflist"): cni,
		// Pods with dnsPolicy Default get this: no nameserver outside the machine.
		m.paths.config("resolv.conf"): nil,
	}
	for path, data := range files {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return err
		}
	}
	containerd, err := exec.LookPath(containerdComponent)
	if err != nil {
		return err
	}
	if _, err := c.launchPath(ctx, containerd, m.component(containerdComponent),
		[]string{"--config=" + m.paths.config("containerd.toml")}, "", containerdAnswers(m.paths.containerdSocket())); err != nil {
		return err
	}
	t0 := time.Now()
	for _, archive := range images {
		if err := importImage(ctx, m.paths.containerdSocket(), archive); err != nil {
			return err
		}
	}
	fmt.Fprintf(o.Out, "localcluster: %d images stored in node %s (%s)\n", len(images), m.name, since(t0))
	return nil
}

// startRealNode waits for the nodes' containerds (startRuntimes), starts their kubelets
// side by side, then kube-proxy and CoreDNS, which serve them all, and moves ordinary
// workloads off the simulated nodes.
func (c *Cluster) startRealNode(ctx context.Context, o Options, cs kubernetes.Interface) error {
	n, l := c.node, c.layout
	t0 := time.Now()
	select {
	case <-c.runtimes:
	case <-ctx.Done():
		return ctx.Err()
	}
	if c.runtimesErr != nil {
		return c.runtimesErr
	}
	fmt.Fprintf(o.Out, "localcluster: the real nodes' containerds ready (waited %s)\n", since(t0))
	files := map[string][]byte{
		n.paths.config("kube-proxy.yaml"): []byte(kubeProxyConfig(l.componentKubeconfig(kubeProxyComponent),
			n.ports.proxyHealthz, n.ports.proxyMetrics)),
		n.paths.config("Corefile"): []byte(corefile(l.componentKubeconfig(corednsComponent), n.ports.dnsHealth, n.ports.dnsReady)),
	}
	for _, m := range n.members {
		files[m.paths.config("kubelet.yaml")] = []byte(kubeletConfig(m, n.kubeletPKI[m.name]))
	}
	for path, data := range files {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return err
		}
	}
	errs := make([]error, len(n.members))
	var wg sync.WaitGroup
	for i, m := range n.members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			kubeconfig := l.componentKubeconfig(m.component(kubeletComponent))
			_, errs[i] = c.launchPath(ctx, filepath.Join(o.BinDir, kubeletComponent), m.component(kubeletComponent),
				kubeletArgs(m, kubeconfig), ", node "+m.name+" Ready", realNodeReady(cs, m.name))
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}

	if _, err := c.launch(ctx, o, kubeProxyComponent, []string{"--config=" + n.paths.config("kube-proxy.yaml")}, "",
		httpOK(http.DefaultClient, "http://127.0.0.1:"+strconv.Itoa(n.ports.proxyHealthz)+"/healthz")); err != nil {
		return err
	}
	if err := ensureClusterDNS(ctx, cs); err != nil {
		return err
	}
	if _, err := c.launch(ctx, o, corednsComponent, []string{"-conf", n.paths.config("Corefile")},
		", "+DNSServiceIP+" answers", dnsAnswers); err != nil {
		return err
	}
	return setSimulatedTaints(ctx, cs, o.Nodes, true)
}

// containerdAnswers holds once containerd serves its API on the node's socket.
func containerdAnswers(socket string) check {
	return func(ctx context.Context) (bool, string) {
		out, err := exec.CommandContext(ctx, "ctr", "--address", socket, "version").CombinedOutput()
		if err != nil {
			return false, lastLine(out)
		}
		return true, ""
	}
}

// importImage loads an image archive into a node's containerd, where the kubelet finds
// it by name (no registry is reachable; pods use imagePullPolicy IfNotPresent). Only
// its content is stored: containerd's CRI unpacks an image into the node's snapshots
// when the first container of it starts there, as after a pull. Unpacking every image
// into every node at start (gunzip and write of each layer) took 26 s for two nodes on
// a busy 2-core machine, most of it for the database images few pods use.
func importImage(ctx context.Context, socket, archive string) error {
	out, err := exec.CommandContext(ctx, "ctr", "--address", socket, "-n", "k8s.io",
		"images", "import", "--no-unpack", archive).CombinedOutput()
	if err != nil {
		return fmt.Errorf("import %s into containerd: %w: %s", archive, err, lastLine(out))
	}
	return nil
}

// ensureClusterDNS gives CoreDNS read access to what it serves, and creates kube-dns:
// the Service pods use as their nameserver, led to CoreDNS on the node's address by an
// EndpointSlice of its own (CoreDNS runs on the host, not in a pod).
func ensureClusterDNS(ctx context.Context, cs kubernetes.Interface) error {
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: corednsUser},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"endpoints", "services", "pods", "namespaces"}, Verbs: []string{"list", "watch"}},
			{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}},
		},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: corednsUser},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: corednsUser},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: corednsUser}},
	}
	dnsPorts := []corev1.ServicePort{
		{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromInt32(53)},
		{Name: "dns-tcp", Port: 53, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(53)},
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-dns", Namespace: metav1.NamespaceSystem,
			Labels: map[string]string{"k8s-app": "kube-dns"}},
		Spec: corev1.ServiceSpec{ClusterIP: DNSServiceIP, Ports: dnsPorts},
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-dns-host", Namespace: metav1.NamespaceSystem, Labels: map[string]string{
			discoveryv1.LabelServiceName: "kube-dns",
			discoveryv1.LabelManagedBy:   "localcluster.mooring.dev",
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{nodeIP}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports: []discoveryv1.EndpointPort{
			{Name: ptr.To("dns"), Port: ptr.To[int32](53), Protocol: ptr.To(corev1.ProtocolUDP)},
			{Name: ptr.To("dns-tcp"), Port: ptr.To[int32](53), Protocol: ptr.To(corev1.ProtocolTCP)},
		},
	}
	// Each object is read first and created only when missing: on kept state they all
	// exist, and a create of kube-dns would fail before the existence check, on its
	// ClusterIP (allocated to the Service itself), instead of with AlreadyExists.
	ensures := []struct {
		get, create func() error
	}{
		{func() error {
			_, err := cs.RbacV1().ClusterRoles().Get(ctx, role.Name, metav1.GetOptions{})
			return err
		},
			func() error {
				_, err := cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{})
				return err
			}},
		{func() error {
			_, err := cs.RbacV1().ClusterRoleBindings().Get(ctx, binding.Name, metav1.GetOptions{})
			return err
		}, func() error {
			_, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{})
			return err
		}},
		{func() error {
			_, err := cs.CoreV1().Services(svc.Namespace).Get(ctx, svc.Name, metav1.GetOptions{})
			return err
		},
			func() error {
				_, err := cs.CoreV1().Services(svc.Namespace).Create(ctx, svc, metav1.CreateOptions{})
				return err
			}},
		{func() error {
			_, err := cs.DiscoveryV1().EndpointSlices(slice.Namespace).Get(ctx, slice.Name, metav1.GetOptions{})
			return err
		}, func() error {
			_, err := cs.DiscoveryV1().EndpointSlices(slice.Namespace).Create(ctx, slice, metav1.CreateOptions{})
			return err
		}},
	}
	for _, e := range ensures {
		err := e.get()
		if apierrors.IsNotFound(err) {
			if err = e.create(); apierrors.IsAlreadyExists(err) {
				err = nil
			}
		}
		if err != nil {
			return fmt.Errorf("cluster DNS: %w", err)
		}
	}
	return nil
}
