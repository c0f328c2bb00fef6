package install

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	discoveryv1ac "k8s.io/client-go/applyconfigurations/discovery/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mooringhq/mooring/internal/localcluster"
)

// The chart's names for what the operator runs as and serves.
const (
	serviceAccount = "mooring-controller-manager"
	webhookService = "mooring-webhook-service"
)

// hostOperator is the operator the chart's Deployment would run, started on the host.
type hostOperator struct {
	*localcluster.Operator
	// Args are the arguments it was started with.
	Args []string
}

// startChartOperator runs the operator as the chart's Deployment of manifest would in
// namespace ns: its arguments, its ServiceAccount, its Secret and webhook Service. What a
// kubelet does is done here instead: the namespace comes from POD_NAMESPACE, the
// certificate Secret is written to the cert directory (--webhook-cert-write, as no volume
// mounts it), and the webhook Service gets an endpoint at the host's address. Ports are
// free ones, since other clusters may run on this machine. logName names its log file
// in the state directory.
func startChartOperator(t *testing.T, ns, manifest, logName string) *hostOperator {
	t.Helper()
	ip := hostIP(t)
	port, err := localcluster.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	var args []string
	for _, a := range chartArgs(t, manifest) {
		switch strings.SplitN(a, "=", 2)[0] {
		case "--metrics-bind-address", "--health-probe-bind-address": // set by StartOperator
		case "--webhook-port", "--webhook-cert-dir": // a free port; a cert dir of the host's
		default:
			args = append(args, a)
		}
	}
	args = append(args,
		"--webhook-host="+ip, "--webhook-port="+strconv.Itoa(port),
		// A directory per start, empty as a new pod's volume would be before the kubelet
		// mounts the Secret.
		"--webhook-cert-dir="+filepath.Join(suite.StateDir, strings.TrimSuffix(logName, ".log")+"-certs"), "--webhook-cert-write",
		"--leader-election-namespace="+ns)
	pointServiceAt(t, ns, ip, port)
	op, err := localcluster.StartOperator(context.Background(), localcluster.OperatorOptions{
		Binary:     suite.OperatorBin,
		Kubeconfig: serviceAccountKubeconfig(t, ns),
		LogPath:    filepath.Join(suite.StateDir, logName),
		Args:       args,
		Env:        []string{"POD_NAMESPACE=" + ns},
	})
	if err != nil {
		t.Fatalf("operator with the chart's arguments %v: %v", args, err)
	}
	t.Logf("operator ready in %s with the chart's arguments %v", op.ReadyIn.Round(100e6), args)
	return &hostOperator{Operator: op, Args: args}
}

// hostIP is an IPv4 address of this host that an endpoint may have; TestMain has checked
// that there is one.
func hostIP(t *testing.T) string {
	t.Helper()
	ip, err := findHostIP()
	if err != nil {
		t.Fatal(err)
	}
	return ip
}

// findHostIP returns an IPv4 address of this host that an endpoint may have (not
// loopback, not link-local: the API server rejects those in EndpointSlices). Without one
// the API server cannot be pointed at the operator, and the package cannot test the chart.
func findHostIP() (string, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return "", fmt.Errorf("list the host's addresses: %w", err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && n.IP.IsGlobalUnicast() {
			return n.IP.String(), nil
		}
	}
	return "", fmt.Errorf("no non-loopback, non-link-local IPv4 address on this host among %v: the API server cannot call the operator's webhooks through the chart's Service; run the package where the host has one (CI does)", addrs)
}

// pointServiceAt gives the chart's webhook Service one ready endpoint, ip:port, in a slice
// the EndpointSlice controller leaves alone (it manages only slices labelled as its own).
func pointServiceAt(t *testing.T, ns, ip string, port int) {
	t.Helper()
	slice := discoveryv1ac.EndpointSlice(webhookService+"-host", ns).
		WithLabels(map[string]string{
			discoveryv1.LabelServiceName: webhookService,
			discoveryv1.LabelManagedBy:   "install-test.mooring.dev",
		}).
		WithAddressType(discoveryv1.AddressTypeIPv4).
		WithEndpoints(discoveryv1ac.Endpoint().WithAddresses(ip).
			WithConditions(discoveryv1ac.EndpointConditions().WithReady(true))).
		// The chart's Service port has no name, so neither has the endpoint's.
		WithPorts(discoveryv1ac.EndpointPort().WithName("").WithPort(int32(port)).WithProtocol(corev1.ProtocolTCP))
	if err := suite.Client.Apply(context.Background(), slice, client.FieldOwner("install-test"), client.ForceOwnership); err != nil {
		t.Fatalf("EndpointSlice for %s: %v", webhookService, err)
	}
}

// serviceAccountKubeconfig writes a kubeconfig with a token of the chart's ServiceAccount,
// so the operator has exactly the chart's RBAC.
func serviceAccountKubeconfig(t *testing.T, ns string) string {
	t.Helper()
	cs, err := kubernetes.NewForConfig(suite.Config)
	if err != nil {
		t.Fatal(err)
	}
	ttl := int64(3600)
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(context.Background(), serviceAccount,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &ttl}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token for the chart's ServiceAccount %s/%s: %v", ns, serviceAccount, err)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["local"] = &clientcmdapi.Cluster{Server: suite.Config.Host, CertificateAuthorityData: suite.Config.CAData}
	kc.AuthInfos[serviceAccount] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	kc.Contexts["chart"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: serviceAccount, Namespace: ns}
	kc.CurrentContext = "chart"
	path := filepath.Join(suite.StateDir, fmt.Sprintf("chart-%s.kubeconfig", ns))
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}
